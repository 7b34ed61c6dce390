//! The tape: an arena of reference-counted graph nodes.
//!
//! Note [Node release]: a node is freed when its count reaches zero, which drops its edges and
//! saved tensors, which may free their own nodes. Done naively that recursion overflows the stack
//! on long chains. Instead the first release on a thread becomes the *releaser* and drains a
//! thread-local work list; nested releases only push onto that list. Slots return to a free list
//! and chunk memory is reused, so allocation is O(1) and addresses are stable.

use super::node::Node;
use parking_lot::Mutex;
use std::cell::{Cell, RefCell, UnsafeCell};
use std::mem::MaybeUninit;
use std::ptr::NonNull;
use std::sync::atomic::{fence, AtomicU32, AtomicU64, AtomicUsize, Ordering};

const _: () = assert!(std::mem::size_of::<Slot>() == 96);

/// Slots per chunk: as many as fill 256 KiB. The allocator hands out blocks this large in 64 KiB
/// slices, so a chunk of a round number of slots (1024 x 240 bytes) left 16 KiB of each 256 KiB
/// unused (6% of the tape's memory).
const CHUNK: usize = (256 << 10) / std::mem::size_of::<Slot>();

/// A place for one node. The node holds its own reference count and mark (`Node::rc`,
/// `Node::mark`: a pass's token in the high 32 bits and, in the low 32, the node's index in that
/// pass's state table or, in slot mode, its count of edges still to arrive; 0 when no pass holds
/// it; Note [Engine marks], Note [Slot mode] in engine.rs), valid while the node lives.
struct Slot {
    node: UnsafeCell<MaybeUninit<Node>>,
}

struct Arena {
    free: Mutex<Vec<SlotPtr>>,
    live: AtomicUsize,
    capacity: AtomicUsize,
}

#[derive(Copy, Clone)]
struct SlotPtr(NonNull<Slot>);
unsafe impl Send for SlotPtr {}

static ARENA: Arena = Arena { free: Mutex::new(Vec::new()), live: AtomicUsize::new(0), capacity: AtomicUsize::new(0) };

/// Number of nodes currently alive in the arena.
pub fn live_nodes() -> usize {
    ARENA.live.load(Ordering::Relaxed)
}

/// Slots the arena has allocated (live + free).
pub fn arena_capacity() -> usize {
    ARENA.capacity.load(Ordering::Relaxed)
}

fn alloc_slot() -> SlotPtr {
    let mut free = ARENA.free.lock();
    if let Some(p) = free.pop() {
        return p;
    }
    // A new chunk; it is never returned to the allocator, so slot addresses stay valid.
    let chunk: Box<[Slot]> = (0..CHUNK)
        .map(|_| Slot { node: UnsafeCell::new(MaybeUninit::uninit()) })
        .collect();
    let chunk: &'static mut [Slot] = Box::leak(chunk);
    ARENA.capacity.fetch_add(CHUNK, Ordering::Relaxed);
    for s in chunk[1..].iter_mut().rev() {
        free.push(SlotPtr(NonNull::from(s)));
    }
    SlotPtr(NonNull::from(&mut chunk[0]))
}

/// A counted reference to a node in the arena.
pub struct NodeRef(NonNull<Slot>);

unsafe impl Send for NodeRef {}
unsafe impl Sync for NodeRef {}

impl NodeRef {
    pub fn new(node: Node) -> NodeRef {
        let p = alloc_slot();
        unsafe {
            let slot = p.0.as_ref();
            let node = (*slot.node.get()).write(node);
            node.rc.store(1, Ordering::Relaxed);
            node.mark.store(0, Ordering::Relaxed);
        }
        ARENA.live.fetch_add(1, Ordering::Relaxed);
        let r = NodeRef(p.0);
        r.placed();
        r
    }
    #[inline]
    pub fn ptr_eq(&self, other: &NodeRef) -> bool {
        self.0 == other.0
    }
    #[inline]
    pub fn addr(&self) -> usize {
        self.0.as_ptr() as usize
    }
    pub fn ref_count(&self) -> usize {
        self.rc().load(Ordering::Relaxed) as usize
    }
    #[inline]
    fn rc(&self) -> &AtomicU32 {
        &self.node().rc
    }
    #[inline]
    fn node(&self) -> &Node {
        // SAFETY: a NodeRef counts as a reference: the node lives while it does
        unsafe { (*self.0.as_ref().node.get()).assume_init_ref() }
    }
    #[inline]
    fn mark(&self) -> &AtomicU64 {
        &self.node().mark
    }
    /// Record `index` for the pass holding `token`, unless another pass holds this node.
    #[inline]
    pub(crate) fn claim(&self, token: MarkToken, index: u32) -> bool {
        let new = (token.0 as u64) << 32 | index as u64;
        match self.mark().compare_exchange(0, new, Ordering::Relaxed, Ordering::Relaxed) {
            Ok(_) => true,
            // a mark left by a pass that gave up (Note [Abandoned marks]) is free to take
            Err(cur) => MarkToken::is_abandoned((cur >> 32) as u32) && self.mark().compare_exchange(cur, new, Ordering::Relaxed, Ordering::Relaxed).is_ok(),
        }
    }
    /// The index recorded by the pass holding `token`, if it holds this node.
    #[inline]
    pub(crate) fn claimed_index(&self, token: MarkToken) -> Option<u32> {
        let m = self.mark().load(Ordering::Relaxed);
        ((m >> 32) as u32 == token.0).then_some(m as u32)
    }
    /// Set the value recorded for the pass holding `token` (which holds this node).
    #[inline]
    pub(crate) fn set_claimed(&self, token: MarkToken, value: u32) {
        self.mark().store((token.0 as u64) << 32 | value as u64, Ordering::Relaxed);
    }
    /// Give the node back (only the pass holding `token` may).
    #[inline]
    pub(crate) fn unclaim(&self, token: MarkToken) {
        if self.claimed_index(token).is_some() {
            self.mark().store(0, Ordering::Relaxed);
        }
    }
}

/// Note [Engine marks]: a backward pass keeps per-node state (dependency count, gradient buffer)
/// in a table; finding a node's row through a hash map cost ~100 instructions and a cache miss
/// per lookup, most of the engine's time on long scalar chains. Instead the pass writes the row
/// index into the node's slot, tagged with a token no other live pass has. A node another pass
/// holds (two threads running backward over one retained graph, or a backward nested in a
/// custom Function's) goes to that pass's fallback map. A table pass clears its marks before it
/// lets go of its nodes, errors included; a slot-mode pass clears each as its node runs and, if it
/// stops early, abandons its token (Note [Abandoned marks]). A node placed in a slot starts
/// unmarked.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub(crate) struct MarkToken(u32);

static NEXT_TOKEN: AtomicU32 = AtomicU32::new(1);

/// Note [Abandoned marks]: a pass in slot mode (engine.rs) that stops early (an error, Ctrl-C)
/// leaves marks on the nodes it had not run. Giving them back means walking what is left of the
/// graph, which on a chain of tens of millions of nodes took seconds after a Ctrl-C. Instead
/// the pass abandons its token: a mark holding an abandoned token counts as no mark (the next
/// pass to claim the node takes it), and an abandoned token is never handed out again (the
/// counter wraps after 2^32 passes), so a stale mark can never pass for a live pass's. The set
/// grows by one token per pass that stopped early.
static ABANDONED: Mutex<Option<std::collections::HashSet<u32>>> = Mutex::new(None);
static ANY_ABANDONED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

impl MarkToken {
    /// A token for a new pass (never 0, the unmarked value, nor an abandoned one).
    pub(crate) fn next() -> MarkToken {
        loop {
            let t = NEXT_TOKEN.fetch_add(1, Ordering::Relaxed);
            if t != 0 && !MarkToken::is_abandoned(t) {
                return MarkToken(t);
            }
        }
    }
    /// Leave this token's marks to whoever claims their nodes next (Note [Abandoned marks]).
    pub(crate) fn abandon(self) {
        ABANDONED.lock().get_or_insert_with(Default::default).insert(self.0);
        ANY_ABANDONED.store(true, Ordering::Release);
    }
    fn is_abandoned(t: u32) -> bool {
        ANY_ABANDONED.load(Ordering::Acquire) && ABANDONED.lock().as_ref().is_some_and(|a| a.contains(&t))
    }
}

impl std::ops::Deref for NodeRef {
    type Target = Node;
    #[inline]
    fn deref(&self) -> &Node {
        self.node()
    }
}

impl Clone for NodeRef {
    #[inline]
    fn clone(&self) -> NodeRef {
        self.rc().fetch_add(1, Ordering::Relaxed);
        NodeRef(self.0)
    }
}

thread_local! {
    static RELEASING: Cell<bool> = const { Cell::new(false) };
    static PENDING: RefCell<Vec<SlotPtr>> = const { RefCell::new(Vec::new()) };
}

impl Drop for NodeRef {
    #[inline]
    fn drop(&mut self) {
        if self.rc().fetch_sub(1, Ordering::Release) != 1 {
            return;
        }
        fence(Ordering::Acquire);
        release(SlotPtr(self.0));
    }
}

fn release(p: SlotPtr) {
    if RELEASING.with(|r| r.get()) {
        PENDING.with(|q| q.borrow_mut().push(p));
        return;
    }
    RELEASING.with(|r| r.set(true));
    let mut next = Some(p);
    while let Some(p) = next {
        unsafe {
            let slot = p.0.as_ref();
            // Drop the node where it is (its Drop finds its hooks by its address); nested
            // releases land on PENDING.
            std::ptr::drop_in_place((*slot.node.get()).as_mut_ptr());
        }
        ARENA.live.fetch_sub(1, Ordering::Relaxed);
        ARENA.free.lock().push(p);
        next = PENDING.with(|q| q.borrow_mut().pop());
    }
    RELEASING.with(|r| r.set(false));
}
