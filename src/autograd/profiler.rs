//! The op profiler behind `ferrograd.autograd.profiler.profile()`.
//!
//! Off by default: a scope then costs one relaxed atomic load. When on, every op entry point and
//! every backward node the engine runs opens a scope; on close it records one event (name, thread,
//! start and end in ns since the profiler started, self time = duration minus the durations of
//! the scopes nested in it on the same thread, nesting depth). The Python side groups the events
//! into torch's `key_averages().table()`.

use parking_lot::Mutex;
use std::borrow::Cow;
use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::Instant;

static ENABLED: AtomicBool = AtomicBool::new(false);
static EVENTS: Mutex<Vec<Event>> = Mutex::new(Vec::new());
static EPOCH: OnceLock<Instant> = OnceLock::new();
static THREAD_IDS: AtomicU64 = AtomicU64::new(1);

/// One closed scope.
#[derive(Clone, Debug)]
pub struct Event {
    pub name: Cow<'static, str>,
    pub thread: u64,
    pub start_ns: u64,
    pub end_ns: u64,
    pub self_ns: u64,
    pub depth: u32,
    /// Recorded by the engine while running backward (a node or an op inside one).
    pub backward: bool,
}

struct Open {
    name: Cow<'static, str>,
    start_ns: u64,
    children_ns: u64,
}

thread_local! {
    static STACK: RefCell<Vec<Open>> = const { RefCell::new(Vec::new()) };
    static THREAD: u64 = THREAD_IDS.fetch_add(1, Ordering::Relaxed);
    static IN_BACKWARD: RefCell<u32> = const { RefCell::new(0) };
}

fn now_ns() -> u64 {
    EPOCH.get_or_init(Instant::now).elapsed().as_nanos() as u64
}

#[inline]
pub fn is_enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

/// Start collecting (drops events of an earlier session).
pub fn start() {
    EVENTS.lock().clear();
    now_ns();
    ENABLED.store(true, Ordering::SeqCst);
}

/// Stop collecting and take the events, ordered by start time.
pub fn stop() -> Vec<Event> {
    ENABLED.store(false, Ordering::SeqCst);
    let mut ev = std::mem::take(&mut *EVENTS.lock());
    ev.sort_by_key(|e| (e.start_ns, e.depth));
    ev
}

/// A scope that records an event when dropped; `None` while the profiler is off.
pub struct Scope(());

#[inline]
pub fn scope(name: &'static str) -> Option<Scope> {
    if !is_enabled() {
        return None;
    }
    Some(open(Cow::Borrowed(name)))
}

/// A scope with a name built at run time (backward nodes of Python Functions, user annotations).
pub fn scope_owned(name: impl Into<Cow<'static, str>>) -> Option<Scope> {
    if !is_enabled() {
        return None;
    }
    Some(open(name.into()))
}

fn open(name: Cow<'static, str>) -> Scope {
    let start_ns = now_ns();
    STACK.with(|s| s.borrow_mut().push(Open { name, start_ns, children_ns: 0 }));
    Scope(())
}

impl Drop for Scope {
    fn drop(&mut self) {
        let end_ns = now_ns();
        let Some((open, depth)) = STACK.with(|s| {
            let mut s = s.borrow_mut();
            let o = s.pop()?;
            let dur = end_ns.saturating_sub(o.start_ns);
            if let Some(parent) = s.last_mut() {
                parent.children_ns += dur;
            }
            Some((o, s.len() as u32))
        }) else {
            return;
        };
        if !is_enabled() {
            return;
        }
        let ev = Event {
            self_ns: end_ns.saturating_sub(open.start_ns).saturating_sub(open.children_ns),
            name: open.name,
            thread: THREAD.with(|t| *t),
            start_ns: open.start_ns,
            end_ns,
            depth,
            backward: IN_BACKWARD.with(|b| *b.borrow() > 0),
        };
        EVENTS.lock().push(ev);
    }
}

/// Marks the current thread as running backward while alive (events get `backward = true`).
pub struct BackwardMark(());

pub fn backward_mark() -> BackwardMark {
    IN_BACKWARD.with(|b| *b.borrow_mut() += 1);
    BackwardMark(())
}

impl Drop for BackwardMark {
    fn drop(&mut self) {
        IN_BACKWARD.with(|b| *b.borrow_mut() -= 1);
    }
}

/// `let _p = prof!("aten::mul");` at the top of an op: a profiler scope for the op's duration.
#[macro_export]
macro_rules! prof {
    ($name:expr) => {
        $crate::autograd::profiler::scope($name)
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_scopes_split_self_time() {
        start();
        {
            let _a = scope("outer");
            std::thread::sleep(std::time::Duration::from_millis(2));
            {
                let _b = scope("inner");
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
        }
        let ev = stop();
        let outer = ev.iter().find(|e| e.name == "outer").unwrap();
        let inner = ev.iter().find(|e| e.name == "inner").unwrap();
        assert_eq!((outer.depth, inner.depth), (0, 1));
        assert!(inner.start_ns >= outer.start_ns && inner.end_ns <= outer.end_ns);
        assert_eq!(outer.self_ns, (outer.end_ns - outer.start_ns) - (inner.end_ns - inner.start_ns));
        assert!(scope("off").is_none());
    }
}
