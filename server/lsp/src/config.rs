//! The server's settings: one documented struct, read from the client's
//! initialization options and `workspace/didChangeConfiguration`. The VS Code
//! extension's settings and the docs are generated from [`Settings::schema`].

use serde::Deserialize;

/// Everything a user can configure, under the `op2` section.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
#[derive(Default)]
pub struct Settings {
    /// Building the POETS graph when a file is saved.
    pub build: BuildSettings,
    /// The hints shown inline in the editor.
    pub inlay_hints: InlayHintSettings,
    /// Tracing of the protocol, for debugging the server.
    pub trace: TraceSettings,
}

/// `op2.build.*`
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct BuildSettings {
    /// Write `<stem>.graph.xml` on every save of a program without errors.
    pub on_save: bool,
    /// Directory for the graph, relative to the workspace folder; empty
    /// means beside the source. Never outside the workspace.
    pub out_dir: String,
    /// Instance data (JSON or OP2's HDF5, told apart by content) to build
    /// with, relative to the workspace folder;
    /// empty means the graph type only.
    pub instance: String,
}

/// `op2.inlayHints.*`
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct InlayHintSettings {
    /// The invocation name after each par_loop head.
    pub invocation_names: bool,
    /// Per argument, the pins, buffer or property it generates.
    pub generated_pins: bool,
}

/// `op2.trace.*`
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(default, rename_all = "camelCase", deny_unknown_fields)]
pub struct TraceSettings {
    /// `off`, `messages` or `verbose`.
    pub server: String,
}

impl Default for BuildSettings {
    fn default() -> BuildSettings {
        BuildSettings {
            on_save: true,
            out_dir: String::new(),
            instance: String::new(),
        }
    }
}

impl Default for InlayHintSettings {
    fn default() -> InlayHintSettings {
        InlayHintSettings {
            invocation_names: true,
            generated_pins: true,
        }
    }
}

impl Default for TraceSettings {
    fn default() -> TraceSettings {
        TraceSettings {
            server: "off".into(),
        }
    }
}

/// One setting as the VS Code manifest and the docs describe it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SettingDescription {
    /// `op2.build.onSave`
    pub key: &'static str,
    /// `boolean` or `string`.
    pub kind: &'static str,
    /// The default, as JSON.
    pub default: &'static str,
    /// What it does.
    pub description: &'static str,
    /// Allowed values, for enumerations.
    pub values: &'static [&'static str],
}

impl Settings {
    /// Reads settings from a JSON value: either `{"op2": {…}}` or the
    /// section itself. A key the server does not know (a typo, or a setting
    /// of a newer editor extension than this `op2`) is left out and named
    /// in the second part of the answer, and the others are taken: before,
    /// one unknown key dropped every setting, so `build.onSave: false` was
    /// ignored after it. A known key with a value of the wrong type is an
    /// error naming it, and then no setting is taken.
    pub fn from_json(value: &serde_json::Value) -> Result<(Settings, Vec<String>), String> {
        let section = value.get("op2").unwrap_or(value);
        if section.is_null() {
            return Ok((Settings::default(), Vec::new()));
        }
        let mut known = section.clone();
        let mut unknown = Vec::new();
        if let serde_json::Value::Object(groups) = &mut known {
            let schema = Settings::schema();
            groups.retain(|group, values| {
                let prefix = format!("op2.{group}.");
                if !schema.iter().any(|s| s.key.starts_with(&prefix)) {
                    unknown.push(format!("op2.{group}"));
                    return false;
                }
                if let serde_json::Value::Object(values) = values {
                    values.retain(|key, _| {
                        let path = format!("{prefix}{key}");
                        let is_known = schema.iter().any(|s| s.key == path);
                        if !is_known {
                            unknown.push(path);
                        }
                        is_known
                    });
                }
                true
            });
        }
        let settings =
            serde_json::from_value(known).map_err(|e| format!("invalid op2 settings: {e}"))?;
        Ok((settings, unknown))
    }

    /// What the user is told of the keys [`Settings::from_json`] left out,
    /// or `None` when there are none.
    pub fn unknown_message(unknown: &[String]) -> Option<String> {
        let (first, rest) = unknown.split_first()?;
        let names = rest
            .iter()
            .take(7)
            .fold(format!("`{first}`"), |names, key| names + ", `" + key + "`");
        let more = rest.len().saturating_sub(7);
        let more = if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        };
        Some(format!(
            "op2 settings: {names}{more} not known to this op2 (a typo, or a newer editor \
             extension than `op2 --version`): ignored; the other settings apply"
        ))
    }

    /// Every setting, with the documentation above. A test checks that this
    /// list covers the struct, and the editor manifests are generated from
    /// it.
    pub fn schema() -> Vec<SettingDescription> {
        vec![
            SettingDescription {
                key: "op2.build.onSave",
                kind: "boolean",
                default: "true",
                description: "Write `<stem>.graph.xml` on every save of a program without errors.",
                values: &[],
            },
            SettingDescription {
                key: "op2.build.outDir",
                kind: "string",
                default: "\"\"",
                description: "Directory for the graph, relative to the workspace folder; empty means beside the source. Never outside the workspace.",
                values: &[],
            },
            SettingDescription {
                key: "op2.build.instance",
                kind: "string",
                default: "\"\"",
                description: "Instance data (JSON or OP2's HDF5, told apart by content) to build with, relative to the workspace folder; empty means the graph type only.",
                values: &[],
            },
            SettingDescription {
                key: "op2.inlayHints.invocationNames",
                kind: "boolean",
                default: "true",
                description: "Show the invocation name after each par_loop head.",
                values: &[],
            },
            SettingDescription {
                key: "op2.inlayHints.generatedPins",
                kind: "boolean",
                default: "true",
                description: "Show, per par_loop argument, the POETS pins, buffer or property it generates.",
                values: &[],
            },
            SettingDescription {
                key: "op2.trace.server",
                kind: "string",
                default: "\"off\"",
                description: "Trace the communication between the editor and the op2 language server.",
                values: &["off", "messages", "verbose"],
            },
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schema_defaults_are_the_struct_defaults() {
        let mut object = serde_json::Map::new();
        for setting in Settings::schema() {
            let mut parts = setting.key.split('.').skip(1).collect::<Vec<_>>();
            let leaf = parts.pop().expect("a key has a leaf");
            let mut node = &mut object;
            for part in parts {
                node = node
                    .entry(part)
                    .or_insert_with(|| serde_json::json!({}))
                    .as_object_mut()
                    .expect("an object");
            }
            node.insert(
                leaf.into(),
                serde_json::from_str(setting.default).expect("a JSON default"),
            );
        }
        // Every key of the schema is a field (deny_unknown_fields), and the
        // defaults agree.
        let (parsed, unknown) = Settings::from_json(&serde_json::Value::Object(object))
            .expect("the schema describes the struct");
        assert_eq!(parsed, Settings::default());
        assert_eq!(unknown, Vec::<String>::new());
    }

    #[test]
    fn unknown_keys_are_named_and_the_known_ones_taken() {
        let (settings, unknown) = Settings::from_json(&serde_json::json!({"op2": {
            "build": {"onSav": true, "onSave": false, "outDir": "out"},
            "future": {"x": 1},
            "inlayHints": {"generatedPins": false},
        }}))
        .expect("settings");
        assert_eq!(unknown, ["op2.build.onSav", "op2.future"]);
        assert!(!settings.build.on_save);
        assert_eq!(settings.build.out_dir, "out");
        assert!(!settings.inlay_hints.generated_pins);
        let message = Settings::unknown_message(&unknown).expect("a message");
        assert!(
            message.contains("`op2.build.onSav`, `op2.future` not known"),
            "{message}"
        );
    }

    #[test]
    fn a_known_key_of_the_wrong_type_is_an_error_naming_it() {
        let error =
            Settings::from_json(&serde_json::json!({"build": {"onSave": "yes"}})).unwrap_err();
        assert!(error.contains("invalid op2 settings"), "{error}");
        assert!(error.contains("boolean"), "{error}");
    }
}
