//! Writing a graph as POETS application XML, version 4, in the portable
//! subset of poets-v4.md: ASCII, code and declarations in CDATA, every
//! Properties/State/Message element present, complete initialisers with
//! numbers that read back exactly, no comments inside EdgeInstances.

use std::io::{self, Write};

use crate::model::{DeviceType, GraphType, Member};

/// The v4 namespace: the loaders pick their parser by it.
pub const NAMESPACE: &str = "https://poets-project.org/schemas/virtual-graph-schema-v4";

/// Escapes text for an attribute value.
pub fn attribute(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\n' | '\r' | '\t' => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// Writes `text` as CDATA, split where it contains `]]>`.
pub fn cdata(out: &mut impl Write, text: &str) -> io::Result<()> {
    out.write_all(b"<![CDATA[")?;
    out.write_all(text.replace("]]>", "]]]]><![CDATA[>").as_bytes())?;
    out.write_all(b"]]>")
}

/// The declaration text of struct members, one per line.
pub fn members(members: &[Member]) -> String {
    let mut out = String::from("\n");
    for member in members {
        match member.length {
            Some(length) => out.push_str(&format!(
                "{} {}[{length}];\n",
                member.ty.name(),
                member.name
            )),
            None => out.push_str(&format!("{} {};\n", member.ty.name(), member.name)),
        }
    }
    out
}

fn element_with_cdata(
    out: &mut impl Write,
    indent: &str,
    name: &str,
    text: &str,
) -> io::Result<()> {
    write!(out, "{indent}<{name}>")?;
    cdata(out, text)?;
    writeln!(out, "</{name}>")
}

fn device_type(out: &mut impl Write, device: &DeviceType) -> io::Result<()> {
    writeln!(out, "      <DeviceType id=\"{}\">", attribute(&device.id))?;
    element_with_cdata(out, "        ", "Properties", &members(&device.properties))?;
    element_with_cdata(out, "        ", "State", &members(&device.state))?;
    if !device.shared_code.is_empty() {
        element_with_cdata(
            out,
            "        ",
            "SharedCode",
            &format!("\n{}", device.shared_code),
        )?;
    }
    for pin in &device.inputs {
        writeln!(
            out,
            "        <InputPin name=\"{}\" messageTypeId=\"{}\">",
            attribute(&pin.name),
            attribute(&pin.message_type)
        )?;
        element_with_cdata(
            out,
            "          ",
            "OnReceive",
            &format!("\n{}", pin.handler),
        )?;
        writeln!(out, "        </InputPin>")?;
    }
    for pin in &device.outputs {
        writeln!(
            out,
            "        <OutputPin name=\"{}\" messageTypeId=\"{}\">",
            attribute(&pin.name),
            attribute(&pin.message_type)
        )?;
        element_with_cdata(out, "          ", "OnSend", &format!("\n{}", pin.handler))?;
        writeln!(out, "        </OutputPin>")?;
    }
    element_with_cdata(
        out,
        "        ",
        "ReadyToSend",
        &format!("\n{}", device.ready_to_send),
    )?;
    if !device.on_init.is_empty() {
        element_with_cdata(out, "        ", "OnInit", &format!("\n{}", device.on_init))?;
    }
    writeln!(out, "      </DeviceType>")
}

/// Writes the document's opening and the graph type.
pub fn write_graph_type(out: &mut impl Write, graph: &GraphType) -> io::Result<()> {
    writeln!(out, "<?xml version=\"1.0\" encoding=\"ASCII\"?>")?;
    writeln!(
        out,
        "<Graphs xmlns=\"{NAMESPACE}\" formatMinorVersion=\"0\" appname=\"{}\">",
        attribute(&graph.id)
    )?;
    writeln!(out, "  <GraphType id=\"{}\">", attribute(&graph.id))?;
    element_with_cdata(out, "    ", "Properties", &members(&graph.properties))?;
    element_with_cdata(
        out,
        "    ",
        "SharedCode",
        &format!("\n{}", graph.shared_code),
    )?;
    writeln!(out, "    <MessageTypes>")?;
    for message in &graph.message_types {
        writeln!(out, "      <MessageType id=\"{}\">", attribute(&message.id))?;
        element_with_cdata(out, "        ", "Message", &members(&message.members))?;
        writeln!(out, "      </MessageType>")?;
    }
    writeln!(out, "    </MessageTypes>")?;
    writeln!(out, "    <DeviceTypes>")?;
    for device in &graph.device_types {
        device_type(out, device)?;
    }
    writeln!(out, "    </DeviceTypes>")?;
    writeln!(out, "  </GraphType>")
}

/// Writes the document's closing.
pub fn write_end(out: &mut impl Write) -> io::Result<()> {
    writeln!(out, "</Graphs>")
}

/// A number in an initialiser: decimal, no suffix, floats in scientific
/// notation with the fewest digits that read back to the same value,
/// whether a reader rounds them to `float` once (GraphSchema's `istream >>`)
/// or through `double` (an unsuffixed C++ literal): the one `float` whose
/// shortest text is halfway between two as a `double` gets its `double`'s
/// digits (`op2_instance::float::float_text`).
pub fn number(value: op2_analysis::value::Value) -> String {
    use op2_analysis::value::Value;
    match value {
        Value::Double(v) => format!("{v:e}"),
        Value::Float(v) => op2_instance::float::float_text(v, format!("{v:e}")),
        Value::Int(v) => v.to_string(),
        Value::Uint(v) => v.to_string(),
        Value::Ll(v) => v.to_string(),
        Value::Ull(v) => v.to_string(),
        Value::Bool(v) => u8::from(v).to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use op2_analysis::value::Value;

    #[test]
    fn cdata_is_split_around_its_terminator() {
        let mut out = Vec::new();
        cdata(&mut out, "a]]>b").unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "<![CDATA[a]]]]><![CDATA[>b]]>"
        );
    }

    #[test]
    fn numbers_read_back_exactly() {
        for v in [
            0.1,
            1.4,
            -2.5e-300,
            1.399_999_976_158_142,
            f64::MAX,
            f64::MIN_POSITIVE,
            5e-324,
        ] {
            let text = number(Value::Double(v));
            assert_eq!(text.parse::<f64>().unwrap(), v, "{text}");
            assert!(!text.contains(['f', 'x']), "{text}");
        }
        let text = number(Value::Float(1.4));
        assert_eq!(text.parse::<f32>().unwrap(), 1.4f32);
        // Read back once or through a double, the same float.
        let odd = f32::from_bits(0x15ae_43fd);
        let text = number(Value::Float(odd));
        assert_eq!(text.parse::<f32>().unwrap(), odd, "{text}");
        #[allow(clippy::cast_possible_truncation)]
        let through_double = text.parse::<f64>().unwrap() as f32;
        assert_eq!(through_double, odd, "{text}");
        assert_eq!(number(Value::Int(-3)), "-3");
        assert_eq!(number(Value::Bool(true)), "1");
    }

    #[test]
    fn attributes_are_escaped() {
        assert_eq!(attribute("a<b&\"c\"\n"), "a&lt;b&amp;&quot;c&quot; ");
    }
}
