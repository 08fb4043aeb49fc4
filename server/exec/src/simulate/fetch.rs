//! The handlers of a `fetch` (compilation.md, "A `fetch` on POETS";
//! `op2_codegen`'s `fetch` module prints the same in C++): the controller
//! asks for windows of items, aggregators forward the requests that meet
//! their items and relay the items through a buffer of a window's size,
//! and the dat's set devices send their items of each window.

use op2_analysis::value::Value;
use op2_syntax::ast::ScalarType;

use super::{FetchRun, PayloadTypes, SimulationError, Simulator};
use crate::native::flat::{from_slot, to_slot};

impl Simulator<'_> {
    /// The controller's `{inv}_begin` of a fetch: the request of the next
    /// window, from the end of the last (0 for the first); a fetch of no
    /// items ends at once.
    pub(super) fn fetch_request(
        &mut self,
        pin: usize,
        plan_index: usize,
        fetch: FetchRun,
    ) -> Result<(), SimulationError> {
        let first = self.controller.window.1;
        if first == 0 {
            // The first window: the invocation starts.
            self.invocation_start = self.clocks[0].at;
            let cost = &mut self.costs[plan_index];
            cost.first_begin.get_or_insert(self.invocation_start);
            cost.last_begin = self.invocation_start;
        }
        let last = first + (fetch.items - first.min(fetch.items)).min(fetch.window);
        self.controller.begin_pending = 0;
        self.controller.end_count = 0;
        self.controller.window = (first, last);
        let (start, end) = self.fan(0, pin);
        self.requests_in_flight += end - start;
        let payload = [to_slot(Value::Uint(first)), to_slot(Value::Uint(last))];
        let types = PayloadTypes::Uniform(ScalarType::Uint);
        self.deliver(0, pin, plan_index, &payload, types)?;
        if fetch.items == 0 {
            self.controller.window = (0, 0);
            self.controller.running = true;
            self.invocation_done(plan_index);
        }
        Ok(())
    }

    /// The controller's `{inv}_end` of a fetch: an item, stored in its
    /// place in the global; after the window's last, the next window, or
    /// `main` again after the fetch's last.
    pub(super) fn fetch_store(
        &mut self,
        message: super::InFlight,
        plan_index: usize,
        fetch: FetchRun,
    ) -> Result<(), SimulationError> {
        let (first, last) = self.controller.window;
        let payload = self.payloads.get(message.payload);
        let item = payload.first().copied().unwrap_or(0) as u32;
        if item < first || item >= last {
            return Err(self.assertion(0, "an item outside the window the fetch asked for arrived"));
        }
        let plan = fetch.plan;
        let (c, dimension) = (plan.components as usize, plan.dimension as usize);
        let part = (item % plan.parts) as usize;
        let at = (item / plan.parts) as usize * dimension + part * c;
        let count = c.min(dimension - part * c);
        let global = &mut self.state.globals[plan.global.index()];
        for (k, slot) in payload.iter().skip(1).take(count).enumerate() {
            if let Some(value) = global.get_mut(at + k) {
                *value = from_slot(*slot, plan.scalar);
            }
        }
        self.controller.end_count += 1;
        if self.controller.end_count > last - first {
            return Err(self.assertion(0, "more items arrived than the fetch's window holds"));
        }
        if self.controller.end_count == last - first {
            self.controller.end_count = 0;
            if last == fetch.items {
                self.controller.window = (0, 0);
                self.controller.running = true;
                self.invocation_done(plan_index);
            } else {
                self.controller.begin_pending = plan_index + 1;
            }
        }
        Ok(())
    }

    /// A set device's `{inv}_end` of a fetch (plan `p`, element `e`): its
    /// next item, the values of its part, zeros past the element's last
    /// component.
    pub(super) fn fetch_item(
        &mut self,
        device: usize,
        p: usize,
        e: usize,
        pin: usize,
    ) -> Result<(), SimulationError> {
        let info = &self.plans[p];
        let plan_index = info.plan;
        let Some(fetch) = self.fetches[plan_index] else {
            return Ok(());
        };
        let state = &mut self.states[info.progress + e];
        let part = state.read_recv_count;
        let item = state.read_total + part;
        state.read_recv_count += 1;
        let plan = fetch.plan;
        let c = plan.components as usize;
        let from = part as usize * c;
        let to = (from + c).min(plan.dimension as usize);
        let mut payload = std::mem::take(&mut self.outgoing);
        payload.clear();
        payload.push(to_slot(Value::Uint(item)));
        payload.extend_from_slice(&self.dats.row(plan.dat.index(), e)[from..to]);
        payload.resize(1 + c, 0);
        let result = self.deliver(
            device,
            pin,
            plan_index,
            &payload,
            PayloadTypes::End(plan_index),
        );
        self.outgoing = payload;
        result
    }

    /// A fetch's aggregator receives a request (input 0), kept when its
    /// window meets the aggregator's items, or an item (input 1), kept in
    /// its buffer; a full buffer is a fault of the generated code.
    pub(super) fn fetch_aggregator_receive(
        &mut self,
        message: super::InFlight,
    ) -> Result<(), SimulationError> {
        let device = message.device as usize;
        let payload = self.payloads.get(message.payload);
        let a = &mut self.aggregators[device - self.first_aggregator];
        let Some(buffer) = a.fetch.as_mut() else {
            return Ok(());
        };
        if message.pin == 0 {
            self.requests_in_flight -= 1;
            let first = payload.first().copied().unwrap_or(0) as u32;
            let last = payload.get(1).copied().unwrap_or(0) as u32;
            if first < buffer.hi && last > buffer.lo {
                if a.begin_pending {
                    return Err(self.assertion(
                        device,
                        "a fetch's request arrived before the one before was forwarded",
                    ));
                }
                a.begin = vec![Value::Uint(first), Value::Uint(last)];
                a.begin_pending = true;
            }
            return Ok(());
        }
        if a.end_count >= buffer.window {
            return Err(self.assertion(
                device,
                "the item buffer of a fetch's aggregator overflowed, a fault of the generated code",
            ));
        }
        let width = buffer.width;
        buffer
            .slots
            .extend((0..width).map(|k| payload.get(k).copied().unwrap_or(0)));
        a.end_count += 1;
        Ok(())
    }

    /// A fetch's aggregator forwards its request to its children (output
    /// 0) or sends its last buffered item up (output 1).
    pub(super) fn fetch_aggregator_send(
        &mut self,
        device: usize,
        pin: usize,
    ) -> Result<(), SimulationError> {
        let a = &mut self.aggregators[device - self.first_aggregator];
        let plan = a.plan;
        let mut payload = std::mem::take(&mut self.outgoing);
        payload.clear();
        let types = if pin == 0 {
            a.begin_pending = false;
            payload.extend(a.begin.iter().map(|v| to_slot(*v)));
            PayloadTypes::Uniform(ScalarType::Uint)
        } else {
            let Some(buffer) = a.fetch.as_mut() else {
                self.outgoing = payload;
                return Ok(());
            };
            let at = buffer.slots.len().saturating_sub(buffer.width);
            payload.extend_from_slice(&buffer.slots[at..]);
            buffer.slots.truncate(at);
            a.end_count = a.end_count.saturating_sub(1);
            PayloadTypes::End(plan)
        };
        if pin == 0 {
            let (start, end) = self.fan(device, pin);
            self.requests_in_flight += end - start;
        }
        let result = self.deliver(device, pin, plan, &payload, types);
        self.outgoing = payload;
        result
    }
}
