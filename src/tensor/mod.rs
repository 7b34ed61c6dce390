//! The Tensor handle: shared storage + a layout (a view), plus autograd metadata.

pub mod dtype;
pub mod layout;
pub mod factory;
pub mod storage;

pub use dtype::{result_type, DType, Element, Scalar, Standing};
pub use layout::{Layout, MemoryFormat, Shape, Strides};
pub use storage::Storage;

use crate::autograd::{Edge, NodeRef};
use crate::error::{Error, Result};
use parking_lot::{Mutex, RwLock};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// What a view shares with its base: the buffer and the version counter.
#[derive(Clone)]
pub struct TensorData {
    pub storage: Arc<Storage>,
    pub layout: Layout,
    pub version: Version,
}

/// Note [Version counters]: a tensor and its views share one version counter (in-place ops
/// bump it, saved tensors compare against it); most tensors are the only counter-sharing group
/// over their buffer, so the counter lives in the storage (a counter of its own cost every
/// tensor a 24-byte allocation, and every saved value a pointer to chase). `.data` and
/// `set_data` give a tensor the same buffer under a counter of its own, and `x.view(dtype)` a
/// new storage under its base's counter.
#[derive(Clone)]
pub enum Version {
    /// The storage's counter.
    Storage,
    /// Another storage's (a reinterpreting view's base).
    Of(Arc<Storage>),
    /// A counter of its own.
    Own(Arc<AtomicU64>),
}

impl TensorData {
    /// The version counter.
    #[inline]
    pub fn counter(&self) -> &AtomicU64 {
        match &self.version {
            Version::Storage => self.storage.version(),
            Version::Of(s) => s.version(),
            Version::Own(c) => c,
        }
    }
    /// The counter, for a tensor over another storage that shares it.
    fn shared_version(&self) -> Version {
        match &self.version {
            Version::Storage => Version::Of(self.storage.clone()),
            v => v.clone(),
        }
    }
}

#[derive(Default)]
pub struct AutogradMeta {
    /// Set on leaves by the user; non-leaves require grad because they have a grad_fn.
    pub requires_grad: bool,
    pub grad: Option<Tensor>,
    pub grad_fn: Option<NodeRef>,
    pub output_nr: u32,
    pub retains_grad: bool,
    /// An output of a custom Function that is one of its inputs returned as-is: torch forbids
    /// modifying it in place (the Function's backward would be bypassed).
    pub function_view: bool,
    /// For views: the base, how to re-create the view from it, and how it was made.
    pub view: Option<Box<ViewMeta>>,
    /// Leaf hooks: run on the incoming gradient before accumulation (id, hook).
    pub hooks: Vec<(u64, crate::autograd::TensorHook)>,
    /// Buffers this tensor exported to NumPy before its data was replaced (Note [Exported storage]).
    pub pinned: Vec<Arc<Storage>>,
    /// Run after the gradient was accumulated into `.grad`.
    pub post_accumulate_hooks: Vec<(u64, std::sync::Arc<dyn Fn(&Tensor) -> Result<()> + Send + Sync>)>,
}

/// How a view was made (torch's CreationMeta), which decides what in-place ops on it (or on its
/// base) may do: see Note [View + in-place].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ViewCreation {
    /// By a view op in grad mode.
    Default,
    /// In no_grad mode: modifying it in place in grad mode (when something requires grad) is refused.
    NoGrad,
    /// One of several views returned by one op (split, chunk, unbind): never modified in place
    /// when something requires grad.
    MultiOutput,
}

/// Note [View + in-place]: a view keeps its base (the tensor that owns the storage, never itself
/// a view), the view op that re-creates it from the base (`replay`), how it was made, and the
/// version of the shared counter when its grad_fn was last set. An in-place op on the view moves
/// the base's history to CopySlices (ops::shape::inplace). When the counter moved on otherwise
/// (the base or another view of it was modified in place), the grad_fn is stale: the next read
/// of it regenerates one through the base's current history (AsStridedBackward0), as torch does;
/// for a view made in no_grad mode or by a multi-output op torch raises instead: reading its
/// grad_fn raises (`stale_view_error`), and so does the regenerated node when backward reaches it.
pub struct ViewMeta {
    pub base: Tensor,
    pub replay: crate::ops::ViewFn,
    pub creation: ViewCreation,
    pub version: u64,
    /// Set when the history went stale and cannot be regenerated (torch's error).
    pub error: Option<String>,
}

pub struct TensorImpl {
    data: RwLock<TensorData>,
    pub(crate) meta: Mutex<AutogradMeta>,
    /// A Python number turned into a 0-dim tensor: weakest standing in type promotion.
    wrapped_number: bool,
}

/// A cheap, clonable handle; clones are the *same* tensor (as two Python references are).
#[derive(Clone)]
pub struct Tensor(pub(crate) Arc<TensorImpl>);

impl Tensor {
    pub(crate) fn from_data(data: TensorData, wrapped_number: bool) -> Tensor {
        Tensor(Arc::new(TensorImpl { data: RwLock::new(data), meta: Mutex::new(AutogradMeta::default()), wrapped_number }))
    }
    pub fn from_storage(storage: Arc<Storage>, layout: Layout) -> Tensor {
        Tensor::from_data(TensorData { storage, layout, version: Version::Storage }, false)
    }
    pub fn from_vec<T: Element>(v: Vec<T>, shape: &[usize]) -> Tensor {
        debug_assert_eq!(v.len(), layout::numel(shape));
        Tensor::from_storage(Arc::new(Storage::from_vec(v)), Layout::contiguous(shape))
    }
    /// A contiguous tensor of `dtype` from its elements' bits.
    pub fn from_bits<C: dtype::Bits>(v: Vec<C>, shape: &[usize], dtype: DType) -> Tensor {
        debug_assert_eq!(v.len(), layout::numel(shape));
        Tensor::from_storage(Arc::new(Storage::from_bits(v, dtype)), Layout::contiguous(shape))
    }
    pub fn scalar<T: Element>(v: T) -> Tensor {
        Tensor::from_vec(vec![v], &[])
    }
    /// A Python number as a 0-dim tensor marked as a wrapped number. Floats keep full precision
    /// (float64 storage) but promote as the default dtype, as torch's wrapped numbers do.
    pub fn wrap_scalar(s: Scalar) -> Tensor {
        let storage = match s {
            Scalar::Bool(b) => Storage::from_vec(vec![b]),
            Scalar::Int(i) => Storage::from_vec(vec![i]),
            Scalar::Float(f) => Storage::from_vec(vec![f]),
        };
        let data = TensorData { storage: Arc::new(storage), layout: Layout::contiguous(&[]), version: Version::Storage };
        Tensor::from_data(data, true)
    }
    pub fn zeros(shape: &[usize], dtype: DType) -> Result<Tensor> {
        let n = layout::checked_numel(shape)?;
        Ok(Tensor::from_storage(Arc::new(Storage::zeros(dtype, n)?), Layout::contiguous(shape)))
    }
    /// Zeros on `device`.
    pub fn zeros_on(shape: &[usize], dtype: DType, device: crate::backend::Device) -> Result<Tensor> {
        crate::backend::cuda::zeros(shape, dtype, device)
    }
    /// A tensor filled with `value` on `device`.
    pub fn full_on(shape: &[usize], value: f64, dtype: DType, device: crate::backend::Device) -> Result<Tensor> {
        crate::backend::cuda::full(shape, value, dtype, device)
    }
    pub fn full(shape: &[usize], value: f64, dtype: DType) -> Result<Tensor> {
        let n = layout::checked_numel(shape)?;
        storage::check_alloc(dtype, n)?;
        crate::with_dtype!(dtype, T => {
            let mut v: Vec<T> = Vec::new();
            v.try_reserve_exact(n).map_err(|_| Error::runtime(format!(
                "DefaultCPUAllocator: not enough memory: you tried to allocate {} bytes.", n.saturating_mul(dtype.size()))))?;
            v.resize(n, T::from_f64(value));
            Ok(Tensor::from_vec(v, shape))
        })
    }

    // ---- data access -------------------------------------------------------------------------

    #[inline]
    pub fn data(&self) -> TensorData {
        self.0.data.read().clone()
    }
    /// Borrow the data under a (recursive) read lock: no Arc or layout clones. Kernels hold it
    /// while they read; nothing may take the write lock of the same tensor meanwhile.
    #[inline]
    pub fn read_data(&self) -> parking_lot::RwLockReadGuard<'_, TensorData> {
        self.0.data.read_recursive()
    }
    #[inline]
    pub fn with_layout<R>(&self, f: impl FnOnce(&Layout) -> R) -> R {
        f(&self.0.data.read().layout)
    }
    pub fn layout(&self) -> Layout {
        self.0.data.read().layout.clone()
    }
    pub fn storage(&self) -> Arc<Storage> {
        self.0.data.read().storage.clone()
    }
    #[inline]
    pub fn shape(&self) -> Shape {
        Shape::from_slice(&self.0.data.read().layout.shape)
    }
    #[inline]
    pub fn device(&self) -> crate::backend::Device {
        self.0.data.read().storage.device()
    }
    #[inline]
    pub fn is_cuda(&self) -> bool {
        self.device().is_cuda()
    }
    #[inline]
    pub fn dtype(&self) -> DType {
        self.0.data.read().storage.dtype()
    }
    #[inline]
    pub fn ndim(&self) -> usize {
        self.0.data.read().layout.shape.len()
    }
    #[inline]
    pub fn numel(&self) -> usize {
        self.0.data.read().layout.numel()
    }
    pub fn is_contiguous(&self) -> bool {
        self.0.data.read().layout.is_contiguous()
    }
    pub fn is_wrapped_number(&self) -> bool {
        self.0.wrapped_number
    }
    /// (dtype as seen by type promotion, standing).
    pub fn promotion_key(&self) -> (DType, Standing) {
        let dt = self.dtype();
        if self.0.wrapped_number {
            (if dt.is_float() { DType::default_float() } else { dt }, Standing::Scalar)
        } else {
            (dt, self.standing())
        }
    }
    pub fn standing(&self) -> Standing {
        if self.0.wrapped_number {
            Standing::Scalar
        } else if self.ndim() == 0 {
            Standing::ZeroDim
        } else {
            Standing::Dim
        }
    }
    pub fn addr(&self) -> usize {
        Arc::as_ptr(&self.0) as usize
    }
    pub fn ptr_eq(&self, other: &Tensor) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
    /// The grad_fn, when this handle is the only owner of the tensor and the tensor the only
    /// owner of the node (then nothing else can reach the node).
    pub fn sole_grad_fn(&self) -> Option<NodeRef> {
        if Arc::strong_count(&self.0) != 1 {
            return None;
        }
        let m = self.0.meta.try_lock()?;
        let n = m.grad_fn.as_ref()?;
        if n.ref_count() == 1 {
            Some(n.clone())
        } else {
            None
        }
    }
    /// True when this handle is the only reference to the tensor and to its storage.
    pub fn is_sole_owner(&self) -> bool {
        Arc::strong_count(&self.0) == 1 && Arc::strong_count(&self.0.data.read().storage) == 1
    }
    pub fn version(&self) -> u64 {
        self.0.data.read().counter().load(Ordering::Relaxed)
    }
    pub fn bump_version(&self) {
        self.0.data.read().counter().fetch_add(1, Ordering::Relaxed);
    }
    /// Replace storage and layout (`t.data = other`); autograd metadata stays, but a view stops
    /// being one (it no longer shares its base's storage).
    /// An old buffer that was exported to NumPy stays alive with this tensor (Note [Exported
    /// storage]): the array may be the tensor's only reader of it, and keeps only the tensor.
    pub fn set_data(&self, other: &Tensor) {
        let d = other.data();
        let same = |s: &Arc<Storage>| Arc::ptr_eq(s, &d.storage);
        let old = std::mem::replace(&mut *self.0.data.write(), TensorData { storage: d.storage.clone(), layout: d.layout, version: Version::Own(Arc::new(AtomicU64::new(0))) });
        let mut m = self.0.meta.lock();
        m.view = None;
        if old.storage.is_exported() && !same(&old.storage) && !m.pinned.iter().any(|p| Arc::ptr_eq(p, &old.storage)) {
            m.pinned.push(old.storage);
        }
    }

    /// Elements in row-major order as a new Vec (converting nothing: T must match the dtype). A
    /// device tensor is copied to the host first (an error if that copy fails).
    pub fn to_vec<T: Element>(&self) -> Result<Vec<T>> {
        if self.is_cuda() {
            return crate::backend::cuda::to_device(self, crate::backend::Device::Cpu)?.to_vec();
        }
        let d = self.0.data.read();
        let n = d.layout.numel();
        if n == 0 {
            return Ok(Vec::new()); // an empty view may point past the end of its (empty) storage
        }
        let src = d.storage.slice::<T>();
        if d.layout.is_contiguous() {
            return Ok(crate::backend::cpu::span(src, d.layout.offset, n).to_vec());
        }
        let mut out = Vec::with_capacity(d.layout.numel());
        d.layout.for_each_offset(|o| out.push(src[o]));
        Ok(out)
    }
    /// The elements' bits in row-major order (a device tensor is copied to the host first).
    pub fn bits_vec<C: dtype::Bits>(&self) -> Result<Vec<C>> {
        let c = if self.is_cuda() { crate::backend::cuda::to_device(self, crate::backend::Device::Cpu)? } else { self.clone() };
        let c = if c.is_contiguous() { c } else { crate::backend::cpu::contiguous(&c)? };
        let d = c.read_data();
        let n = d.layout.numel();
        if n == 0 {
            return Ok(Vec::new());
        }
        Ok(crate::backend::cpu::span(d.storage.bits::<C>(), d.layout.offset, n).to_vec())
    }
    /// Run `f` on the elements as one contiguous slice, borrowing when the layout allows (a device
    /// tensor is copied to the host first).
    pub fn with_contiguous<T: Element, R>(&self, f: impl FnOnce(&[T]) -> R) -> Result<R> {
        if self.is_cuda() {
            return crate::backend::cuda::to_device(self, crate::backend::Device::Cpu)?.with_contiguous(f);
        }
        let d = self.0.data.read();
        if d.layout.numel() == 0 {
            return Ok(f(&[]));
        }
        if d.layout.is_contiguous() {
            let n = d.layout.numel();
            let src = d.storage.slice::<T>();
            return Ok(f(crate::backend::cpu::span(src, d.layout.offset, n)));
        }
        drop(d);
        let v = self.to_vec::<T>()?;
        Ok(f(&v))
    }
    /// The single element as f64.
    pub fn item_f64(&self) -> Result<f64> {
        if self.is_cuda() && self.numel() == 1 {
            return crate::backend::cuda::to_device(self, crate::backend::Device::Cpu)?.item_f64();
        }
        if self.numel() != 1 {
            return Err(Error::runtime(format!(
                "a Tensor with {} elements cannot be converted to Scalar",
                self.numel()
            )));
        }
        let d = self.0.data.read();
        let o = d.layout.offset;
        Ok(crate::with_dtype!(d.storage.dtype(), T => d.storage.slice::<T>()[o].to_f64()))
    }
    pub fn item(&self) -> Result<Scalar> {
        let dt = self.dtype();
        if dt.is_int() && self.numel() == 1 {
            let v = crate::with_dtype!(dt, T => self.to_vec::<T>()?[0].to_i64());
            return Ok(Scalar::Int(v));
        }
        let v = self.item_f64()?;
        Ok(match dt {
            DType::Bool => Scalar::Bool(v != 0.0),
            _ => Scalar::Float(v),
        })
    }

    // ---- views without autograd ---------------------------------------------------------------

    /// A tensor over the same storage and version counter with another layout, no autograd.
    pub fn view_with_layout(&self, layout: Layout) -> Tensor {
        let d = self.0.data.read();
        Tensor::from_data(TensorData { storage: d.storage.clone(), layout, version: d.version.clone() }, false)
    }
    /// The same memory read as `dtype` through `layout` (in elements of `dtype`), sharing the
    /// version counter; no autograd (x.view(dtype)).
    pub fn reinterpret(&self, dtype: DType, layout: Layout) -> Tensor {
        let d = self.0.data.read();
        let storage = Arc::new(Storage::reinterpret(&d.storage, dtype));
        Tensor::from_data(TensorData { storage, layout, version: d.shared_version() }, false)
    }
    /// Same storage, layout and version counter; no autograd history (torch's detach).
    pub fn alias(&self) -> Tensor {
        Tensor::from_data(self.data(), self.0.wrapped_number)
    }
    /// A new view of the whole tensor (same storage and version counter), no autograd.
    pub fn alias_view(&self) -> Tensor {
        self.alias()
    }
    /// `.data`: same storage, a fresh version counter, no autograd (as torch's `.data`).
    pub fn alias_fresh_version(&self) -> Tensor {
        let d = self.data();
        Tensor::from_data(TensorData { storage: d.storage, layout: d.layout, version: Version::Own(Arc::new(AtomicU64::new(0))) }, false)
    }
    pub(crate) fn alias_with_grad_fn(&self, node: NodeRef, output_nr: u32) -> Tensor {
        let t = self.alias();
        {
            let mut m = t.0.meta.lock();
            m.grad_fn = Some(node);
            m.output_nr = output_nr;
        }
        t
    }

    // ---- autograd metadata -------------------------------------------------------------------

    /// As torch: set on a leaf, or with a grad_fn, or a view of a base that requires grad (a view
    /// made in no_grad mode has no grad_fn, yet requires grad).
    #[inline]
    pub fn requires_grad(&self) -> bool {
        self.refresh_view();
        let base = {
            let m = self.0.meta.lock();
            if m.requires_grad || m.grad_fn.is_some() {
                return true;
            }
            match m.view.as_deref() {
                Some(v) => v.base.clone(),
                None => return false,
            }
        };
        base.requires_grad()
    }
    pub fn grad_fn(&self) -> Option<NodeRef> {
        self.refresh_view();
        self.0.meta.lock().grad_fn.clone()
    }
    pub fn output_nr(&self) -> u32 {
        self.refresh_view();
        self.0.meta.lock().output_nr
    }
    pub fn is_leaf(&self) -> bool {
        self.refresh_view();
        self.0.meta.lock().grad_fn.is_none()
    }
    pub fn set_requires_grad(&self, flag: bool) -> Result<()> {
        let mut m = self.0.meta.lock();
        if m.grad_fn.is_some() {
            if !flag {
                return Err(Error::runtime(
                    "you can only change requires_grad flags of leaf variables. If you want to use a computed variable in a subgraph that doesn't require differentiation use var_no_grad = var.detach().",
                ));
            }
            return Ok(());
        }
        if flag && !self.dtype().is_float() {
            return Err(Error::runtime("only Tensors of floating point dtype can require gradients"));
        }
        m.requires_grad = flag;
        Ok(())
    }
    pub fn grad(&self) -> Option<Tensor> {
        self.0.meta.lock().grad.clone()
    }
    pub fn set_grad(&self, g: Option<Tensor>) {
        self.0.meta.lock().grad = g;
    }
    pub fn set_grad_fn(&self, node: Option<NodeRef>, output_nr: u32) {
        let mut m = self.0.meta.lock();
        m.grad_fn = node;
        m.output_nr = output_nr;
    }
    /// An in-place shape op (`t_`, `squeeze_`, ...) on a tensor with history: this tensor takes the
    /// geometry, grad_fn and view relation of `view`, the op's result (a view of this tensor).
    pub fn assume_view(&self, view: &Tensor) {
        let d = view.data();
        let (gf, nr, vm) = {
            let m = view.0.meta.lock();
            (m.grad_fn.clone(), m.output_nr, m.view.as_ref().map(|v| (v.base.clone(), v.replay.clone(), v.creation)))
        };
        *self.0.data.write() = d;
        let version = self.version();
        let mut m = self.0.meta.lock();
        m.grad_fn = gf;
        m.output_nr = nr;
        m.view = match vm {
            // a view of this tensor itself stays no view (it would hold itself)
            Some((base, replay, creation)) if !Arc::ptr_eq(&base.0, &self.0) => Some(Box::new(ViewMeta { base, replay, creation, version, error: None })),
            _ => None,
        };
    }
    pub fn set_function_view(&self) {
        self.0.meta.lock().function_view = true;
    }
    pub fn is_function_view(&self) -> bool {
        self.0.meta.lock().function_view
    }
    pub fn retains_grad(&self) -> bool {
        self.0.meta.lock().retains_grad
    }
    /// The edge a gradient for this tensor flows along, if it requires grad.
    pub fn gradient_edge(&self) -> Option<Edge> {
        self.refresh_view();
        let m = self.0.meta.lock();
        if let Some(n) = &m.grad_fn {
            Some(Edge::Node(n.clone(), m.output_nr))
        } else if m.requires_grad {
            Some(Edge::Leaf(self.clone()))
        } else {
            None
        }
    }
    /// Make this tensor keep the gradient flowing into it during backward.
    pub fn retain_grad(&self) -> Result<()> {
        let (node, nr) = {
            let mut m = self.0.meta.lock();
            if m.grad_fn.is_none() {
                if !m.requires_grad {
                    return Err(Error::runtime("can't retain_grad on Tensor that has requires_grad=False"));
                }
                return Ok(()); // leaves keep .grad anyway
            }
            if m.retains_grad {
                return Ok(());
            }
            m.retains_grad = true;
            (m.grad_fn.clone(), m.output_nr)
        };
        if let Some(node) = node {
            node.with_extras(|ex| ex.retained.push((nr, Arc::downgrade(&self.0))));
        }
        Ok(())
    }
    /// Register a gradient hook: on the leaf itself, or on this output of its grad_fn.
    pub fn register_hook(&self, hook: crate::autograd::TensorHook) -> Result<u64> {
        self.refresh_view();
        let id = crate::autograd::next_hook_id();
        let mut m = self.0.meta.lock();
        match &m.grad_fn {
            Some(n) => {
                let nr = m.output_nr;
                n.with_extras(|ex| ex.tensor_hooks.push((id, nr, hook)));
            }
            None => {
                if !m.requires_grad {
                    return Err(Error::runtime("cannot register a hook on a tensor that doesn't require gradient"));
                }
                m.hooks.push((id, hook));
            }
        }
        Ok(id)
    }
    pub fn remove_hook(&self, id: u64) {
        let mut m = self.0.meta.lock();
        m.hooks.retain(|h| h.0 != id);
        m.post_accumulate_hooks.retain(|h| h.0 != id);
        if let Some(n) = &m.grad_fn {
            n.remove_hook(id);
        }
    }
    pub fn register_post_accumulate_grad_hook(&self, hook: std::sync::Arc<dyn Fn(&Tensor) -> Result<()> + Send + Sync>) -> Result<u64> {
        let mut m = self.0.meta.lock();
        if m.grad_fn.is_some() {
            return Err(Error::runtime("post accumulate grad hooks cannot be registered on non-leaf tensors"));
        }
        let id = crate::autograd::next_hook_id();
        m.post_accumulate_hooks.push((id, hook));
        Ok(id)
    }
    pub fn leaf_hooks(&self) -> (Vec<crate::autograd::TensorHook>, Vec<std::sync::Arc<dyn Fn(&Tensor) -> Result<()> + Send + Sync>>) {
        let m = self.0.meta.lock();
        (m.hooks.iter().map(|h| h.1.clone()).collect(), m.post_accumulate_hooks.iter().map(|h| h.1.clone()).collect())
    }
    pub fn view_info(&self) -> Option<(Tensor, crate::ops::ViewFn)> {
        self.0.meta.lock().view.as_ref().map(|v| (v.base.clone(), v.replay.clone()))
    }
    /// How this view was made; None when it is not a view.
    pub fn view_creation(&self) -> Option<ViewCreation> {
        self.0.meta.lock().view.as_ref().map(|v| v.creation)
    }
    /// Make this tensor a view of `base` (the storage's owner), current as of now.
    pub fn set_view_info(&self, base: Tensor, replay: crate::ops::ViewFn, creation: ViewCreation) {
        let version = self.version();
        self.0.meta.lock().view = Some(Box::new(ViewMeta { base, replay, creation, version, error: None }));
    }
    pub fn set_view_creation(&self, creation: ViewCreation) {
        if let Some(v) = self.0.meta.lock().view.as_mut() {
            v.creation = creation;
        }
    }
    /// The view's grad_fn was just set for the current version (an in-place op on the view itself).
    pub fn mark_view_current(&self) {
        let version = self.version();
        if let Some(v) = self.0.meta.lock().view.as_mut() {
            v.version = version;
        }
    }
    /// The grad_fn and output number as stored, without refreshing a stale view.
    pub(crate) fn raw_grad_fn(&self) -> (Option<NodeRef>, u32) {
        let m = self.0.meta.lock();
        (m.grad_fn.clone(), m.output_nr)
    }
    /// Note [View + in-place]: regenerate a stale view's grad_fn.
    #[inline]
    fn refresh_view(&self) {
        let attr = match self.0.meta.lock().view.as_deref() {
            None => return,
            Some(v) => v.version,
        };
        let current = self.version();
        if attr != current {
            self.regenerate_view_grad_fn(current);
        }
    }
    #[cold]
    fn regenerate_view_grad_fn(&self, current: u64) {
        let (base, replay, creation, has_fn) = {
            let m = self.0.meta.lock();
            let Some(v) = m.view.as_deref() else { return };
            (v.base.clone(), v.replay.clone(), v.creation, m.grad_fn.is_some())
        };
        // torch: a view without history, of a base without history, has nothing to regenerate
        if !has_fn && !base.requires_grad() {
            return;
        }
        let (node, error) = if creation == ViewCreation::Default {
            (crate::ops::view_grad_fn(self, &base, replay), None)
        } else {
            let err = crate::ops::view_rebase_error(self, creation, true);
            let msg = err.msg.clone();
            (crate::ops::view_error_fn(self, &base, err), Some(msg))
        };
        let mut m = self.0.meta.lock();
        m.grad_fn = node;
        m.output_nr = 0;
        if let Some(v) = m.view.as_mut() {
            v.version = current;
            v.error = error;
        }
    }
    /// Note [View + in-place]: torch's error for reading the history of a view made in no_grad mode
    /// or by a multi-output op whose base (or another view of it) was modified in place.
    pub fn stale_view_error(&self) -> Option<Error> {
        self.refresh_view();
        self.0.meta.lock().view.as_deref().and_then(|v| v.error.clone()).map(Error::runtime)
    }
    /// A tensor with this tensor's current values (copied) and gradient edge: what an in-place
    /// op's backward must see as "before".
    pub fn snapshot_with_history(&self) -> Result<Tensor> {
        let snap = crate::backend::cpu::contiguous(self)?;
        match self.gradient_edge() {
            Some(Edge::Node(n, nr)) => Ok(snap.alias_with_grad_fn(n, nr)),
            Some(Edge::Leaf(_)) | None => {
                if self.requires_grad() {
                    // a leaf: gradients reach it through an identity view of itself
                    Ok(self.clone())
                } else {
                    Ok(snap)
                }
            }
        }
    }
    pub(crate) fn from_impl(t: Arc<TensorImpl>) -> Tensor {
        Tensor(t)
    }
}

impl std::fmt::Debug for Tensor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Tensor(shape={:?}, dtype={})", &self.shape()[..], self.dtype())
    }
}
