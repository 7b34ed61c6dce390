"""The torch API that the compatibility table lists beyond the op registry, and the known
differences from torch.

Only *which names to show* and *how ferrograd differs* are written here. Whether a name exists is
looked up in the installed ferrograd, and for registered ops the parity test cases say what is
checked, so a status cannot go stale: a name that ferrograd gains moves from "not yet" to
"supported" on the next docs build.
"""

# section -> names, as torch spells them (`Tensor.x` is a method, dotted names are submodules)
SECTIONS = {
    "Creation and random numbers": """
        tensor as_tensor from_numpy from_dlpack zeros ones full empty arange linspace logspace eye
        zeros_like ones_like full_like empty_like rand rand_like randn randn_like randint randint_like
        randperm normal bernoulli multinomial manual_seed preserve_format contiguous_format channels_last
    """,
    "Math beyond the registry": """
        atan2 hypot lerp addmm addcmul addcdiv baddbmm einsum tensordot cross cumprod sort argsort topk
        kthvalue median unique diag tril triu trace kron cdist isnan isinf isfinite nan_to_num sinh cosh
        asin acos atan log10 exp2 logaddexp fmod lgamma erfinv erfc count_nonzero bincount searchsorted
        roll meshgrid masked_select nonzero movedim swapaxes random.fork_rng get_rng_state set_rng_state
        broadcast_tensors broadcast_shapes atleast_1d atleast_2d atleast_3d hstack vstack dstack column_stack
        row_stack hsplit vsplit dsplit tensor_split moveaxis swapdims unflatten diagflat combinations put inner
        vdot dist renorm chain_matmul nanmedian mode quantile nanquantile histc
    """,
    "Linear algebra": """
        linalg.norm linalg.vector_norm linalg.matrix_norm linalg.inv linalg.solve linalg.det linalg.svd
        linalg.qr linalg.cholesky linalg.eigh linalg.slogdet linalg.matrix_power linalg.matrix_exp
        linalg.solve_triangular linalg.eigvalsh linalg.svdvals linalg.pinv linalg.multi_dot linalg.vecdot linalg.cross linalg.diagonal linalg.lstsq linalg.LinAlgError det slogdet
        logdet inverse matrix_power matrix_exp pinverse
    """,
    "Tensor methods and attributes": """
        Tensor.backward Tensor.register_hook Tensor.retain_grad Tensor.detach Tensor.requires_grad_
        Tensor.item Tensor.tolist Tensor.numpy Tensor.to Tensor.cpu Tensor.cuda Tensor.size Tensor.stride
        Tensor.data_ptr Tensor.is_contiguous Tensor.__dlpack__ Tensor.__array__ Tensor.index_add_
        Tensor.scatter_ Tensor.scatter_add_ Tensor.unfold Tensor.new_zeros Tensor.new_ones Tensor.new_full Tensor.new_empty Tensor.new_tensor
        Tensor.half
        Tensor.storage Tensor.pin_memory
    """,
    "nn layers": """
        nn.Module nn.Parameter nn.Sequential nn.ModuleList nn.ModuleDict nn.ParameterList nn.Linear
        nn.Bilinear nn.Embedding nn.Conv1d nn.Conv2d nn.Conv3d nn.ConvTranspose2d nn.MaxPool1d
        nn.MaxPool2d nn.AvgPool2d nn.AdaptiveAvgPool1d nn.AdaptiveAvgPool2d nn.AdaptiveMaxPool2d nn.MaxUnpool2d nn.BatchNorm1d nn.BatchNorm2d nn.LayerNorm
        nn.GroupNorm nn.RMSNorm nn.Dropout nn.Identity nn.Flatten nn.Unflatten nn.ReLU nn.LeakyReLU
        nn.GELU nn.SiLU nn.Tanh nn.Sigmoid nn.Softmax nn.LogSoftmax nn.ELU nn.Softplus nn.Mish
        nn.PReLU nn.RNN nn.LSTM nn.GRU nn.MultiheadAttention nn.TransformerEncoderLayer
        nn.TransformerEncoder nn.TransformerDecoderLayer nn.TransformerDecoder nn.Transformer
    """,
    "Losses": """
        nn.CrossEntropyLoss nn.NLLLoss nn.MSELoss nn.L1Loss nn.SmoothL1Loss nn.HuberLoss nn.BCELoss
        nn.BCEWithLogitsLoss nn.KLDivLoss
    """,
    "nn.functional": """
        nn.functional.linear nn.functional.relu nn.functional.gelu nn.functional.silu
        nn.functional.leaky_relu nn.functional.elu nn.functional.softplus nn.functional.sigmoid
        nn.functional.tanh nn.functional.softmax nn.functional.log_softmax nn.functional.dropout
        nn.functional.layer_norm nn.functional.group_norm nn.functional.batch_norm
        nn.functional.embedding nn.functional.pad nn.functional.one_hot nn.functional.cross_entropy
        nn.functional.nll_loss nn.functional.mse_loss nn.functional.l1_loss nn.functional.smooth_l1_loss
        nn.functional.binary_cross_entropy nn.functional.binary_cross_entropy_with_logits
        nn.functional.kl_div nn.functional.conv1d nn.functional.conv2d nn.functional.conv3d
        nn.functional.max_pool2d nn.functional.avg_pool2d nn.functional.adaptive_avg_pool2d
        nn.functional.interpolate nn.functional.scaled_dot_product_attention nn.functional.normalize
        nn.functional.cosine_similarity
    """,
    "nn.init and nn.utils": """
        nn.init.uniform_ nn.init.normal_ nn.init.zeros_ nn.init.ones_ nn.init.xavier_uniform_
        nn.init.kaiming_uniform_ nn.init.kaiming_normal_ nn.utils.clip_grad_norm_
        nn.utils.clip_grad_value_ nn.utils.parameters_to_vector nn.utils.rnn.PackedSequence
        nn.utils.rnn.pack_padded_sequence nn.utils.rnn.pad_packed_sequence nn.utils.rnn.pad_sequence
        nn.utils.rnn.pack_sequence nn.utils.rnn.unpack_sequence nn.utils.rnn.unpad_sequence
        nn.attention.sdpa_kernel nn.attention.SDPBackend
    """,
    "Optimizers and schedulers": """
        optim.SGD optim.Adam optim.AdamW optim.RMSprop optim.Adagrad optim.Adadelta optim.Adamax
        optim.NAdam optim.RAdam optim.LBFGS optim.lr_scheduler.StepLR optim.lr_scheduler.MultiStepLR
        optim.lr_scheduler.ExponentialLR optim.lr_scheduler.CosineAnnealingLR
        optim.lr_scheduler.LambdaLR optim.lr_scheduler.OneCycleLR optim.lr_scheduler.ReduceLROnPlateau
        optim.lr_scheduler.LinearLR
    """,
    "Autograd": """
        autograd.grad autograd.backward autograd.Function autograd.functional.vjp
        autograd.functional.jvp autograd.functional.jacobian autograd.functional.hessian
        autograd.functional.hvp autograd.functional.vhp autograd.gradcheck autograd.gradgradcheck
        autograd.detect_anomaly autograd.graph.saved_tensors_hooks autograd.forward_ad
        autograd.forward_ad.dual_level autograd.forward_ad.make_dual autograd.forward_ad.unpack_dual
        autograd.forward_ad.enter_dual_level autograd.forward_ad.exit_dual_level
        autograd.profiler.profile profiler.profile profiler.record_function no_grad enable_grad
        set_grad_enabled inference_mode
    """,
    "Data, checkpointing, serialization": """
        utils.data.Dataset utils.data.TensorDataset utils.data.DataLoader utils.data.random_split
        utils.checkpoint.checkpoint utils.checkpoint.checkpoint_sequential save load
    """,
    "Devices, dtypes, threads": """
        float32 float64 int64 bool float16 bfloat16 int32 int8 uint8 complex64 device cuda.is_available
        cuda.device_count cuda.synchronize set_num_threads get_num_threads
    """,
    "Compilation and distributed": """
        compile jit.script fx.symbolic_trace fx.GraphModule fx.Interpreter fx.Transformer
        distributed.init_process_group
        nn.parallel.DistributedDataParallel
    """,
}

# name -> how ferrograd differs from torch (only for names ferrograd has)
DIFFERENCES = {
    "rand": "same distribution; the random stream differs from torch's (manual_seed makes runs reproducible, not identical to torch)",
    "randn": "same distribution; the random stream differs from torch's",
    "randint": "same distribution; the random stream differs from torch's",
    "rand_like": "random stream differs from torch's",
    "randn_like": "random stream differs from torch's",
    "randint_like": "random stream differs from torch's",
    "manual_seed": "seeds ferrograd's generator; sequences differ from torch's",
    "nn.functional.dropout": "same distribution of masks; the random stream differs from torch's",
    "nn.Dropout": "the random stream differs from torch's",
    "Tensor.to": "CPU only until the CUDA backend lands; dtypes float32, float64, int64, bool",
    "Tensor.cuda": "raises torch's 'not compiled with CUDA' error: the CUDA backend is not built yet",
    "from_numpy": "float32, float64, int64 and bool arrays (other dtypes raise TypeError)",
    "from_dlpack": "CPU tensors of float32, float64, int64 and bool",
    "Tensor.numpy": "shares memory as torch's",
    "save": "writes the safetensors format (not pickle); files interoperate with `safetensors.torch`",
    "load": "reads safetensors files (ferrograd's or `safetensors.torch`'s)",
    "device": "only 'cpu' until the CUDA backend lands",
    "cuda.is_available": "always False for now (the CUDA backend is a stub)",
    "set_num_threads": "sizes rayon's pool before the first parallel op; afterwards only caps kernels",
    "linalg.svd": "one-sided Jacobi; each pair of singular vectors' sign is normalized (left one's largest entry positive)",
    "linalg.det": "through LU with full pivoting: values agree with torch's to rounding",
    "linalg.matrix_exp": "Taylor series with scaling and squaring (torch: Pade); agrees to ~1e-12 in float64",
    "linalg.eigh": "cyclic Jacobi; each eigenvector's sign is normalized (largest entry positive), torch's is LAPACK's",
    "nanmedian": "the index of an all-NaN slice may differ from torch's (whose is not well defined)",
    "autograd.forward_ad.make_dual": "a dual tensor is a wrapper: isinstance(dual, Tensor) is False, and a plain "
    "tensor's in-place write of a dual (plain[0] = dual) raises TypeError (docs/guides/forward-ad.md)",
}
