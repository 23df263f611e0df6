"""The inventory of torch's public names: each name of torch 2.13's main namespaces is in
tracegrad, or belongs to a kind tracegrad does not have (``KINDS``: storages, TorchScript,
quantization, accelerators, compressed sparse layouts, ...), or is a named gap (``GAPS``,
with why). A new torch name (an upgrade) or a gap filled (a stale entry) fails here, so
the list stays the truth about what a PyTorch program can reach (docs/pytorch.md)."""
from __future__ import annotations

import importlib
import re
import types

import pytest

import tracegrad as tg

torch = pytest.importorskip("torch")


def _mod(name):
    return importlib.import_module(name)

NAMESPACES = {
    "torch": lambda: (torch, tg),
    "torch.Tensor": lambda: (torch.Tensor, tg.Tensor),
    "torch.nn": lambda: (torch.nn, tg.nn),
    "torch.nn.functional": lambda: (torch.nn.functional, tg.nn.functional),
    "torch.nn.init": lambda: (torch.nn.init, tg.nn.init),
    "torch.nn.utils": lambda: (_mod("torch.nn.utils"), tg.nn.utils),
    "torch.linalg": lambda: (torch.linalg, tg.linalg),
    "torch.fft": lambda: (torch.fft, tg.fft),
    "torch.special": lambda: (torch.special, tg.special),
    "torch.optim": lambda: (torch.optim, tg.optim),
    "torch.optim.lr_scheduler": lambda: (torch.optim.lr_scheduler, tg.optim.lr_scheduler),
    "torch.autograd": lambda: (torch.autograd, tg.autograd),
    "torch.func": lambda: (_mod("torch.func"), tg.func),
    "torch.distributions": lambda: (_mod("torch.distributions"), tg.distributions),
    "torch.utils.data": lambda: (_mod("torch.utils.data"), tg.utils.data),
}

# kinds of names tracegrad has none of, by pattern
KINDS = [
    (r"Storage$|^(storage|is_storage|untyped_storage|storage_type|StorageBase)$",
     "storages: a tracegrad tensor is a NumPy array, not a view of a torch Storage"),
    (r"^(Script|LiteScript|Concrete|CompilationUnit|Argument|ArgumentSpec|CompleteArgumentSpec|"
     r"Block|Node|Value|Use|Graph|Code|CallStack|Gradient|ErrorReport|FunctionSchema|AliasDb|"
     r"Capsule|FileCheck|IODescriptor|ExecutionPlan|GraphExecutorState|StaticModule|"
     r"ThroughputBenchmark|Benchmark|TracingState|DeepCopyMemoTable|"
     r"DeserializationStorageContext|SerializationStorageContext|PyTorchFile|import_ir_module|"
     r"parse_ir|parse_schema|parse_type_comment|merge_type_from_type_comment|unify_type_list|"
     r"JITException|FatalError|OperatorInfo|Tag|AggregationType|LockingLogger|LoggerBase|"
     r"NoopLogger|PRIVATE_OPS|classes|library|ops|jit)|Type$",
     "TorchScript and the C++ binding's types: tracegrad's compiler is tg.compile on its IR"),
    (r"quant|^q_|^qint|^quint|qscheme|^per_channel|^per_tensor|fbgemm|dequantize|int_repr|"
     r"choose_qparams|^ao$|^qat$|^intrinsic$",
     "quantization: tracegrad computes in floating point"),
    (r"cudnn|miopen|mkldnn|vulkan|^xpu$|^is_xpu$|^mps$|^is_mps$|^mtia$|^is_mtia$|^ipu$|^is_ipu$|"
     r"xla|^is_maia$|cuda|^Stream$|^Event$|record_stream|pin_memory|is_pinned|AcceleratorError|"
     r"OutOfMemoryError|^get_device_module$|profiler_allow|^is_meta$|SyncBatchNorm",
     "accelerators and vendor kernels: tracegrad runs on the CPU (tg.jit's JAX backend for "
     "GPU/TPU)"),
    (r"sparse_(csr|csc|bsr|bsc)|crow_indices|ccol_indices|(^|_)col_indices|row_indices|"
     r"sparse_compressed|to_sparse_(csr|csc|bsr|bsc)|is_sparse_csr|"
     r"^(hsmm|hspmm|smm|dsmm|saddmm|sspaddmm)$|sparse_resize|resize_as_sparse_|sparse_mask|"
     r"to_padded_tensor",
     "compressed sparse layouts (CSR, CSC, BSR, BSC) and hybrid sparse products: tracegrad "
     "has COO"),
    (r"_copy$", "the view-copy variants of torch's functionalization (x.view(...).clone())"),
    (r"^(Sym|sym_)", "symbolic shapes: tg.compile specialises on shapes"),
    (r"^(bfloat16|BFloat16Tensor|complex32|chalf|float8_|float4_|uint[1-7]$|int[1-7]$|bits|"
     r"bit$|uint16|uint32|uint64)$|^(float8_|float4_|bits)",
     "dtypes NumPy lacks (bfloat16, float8, complex32, sub-byte), or torch's limited unsigned "
     "ones"),
    (r"^(autocast_(increment|decrement)_nesting|clear_autocast_cache|get_autocast_|"
     r"set_autocast_|is_autocast_(cache|cpu|ipu|xla))",
     "autocast internals: an enabled CPU autocast needs bfloat16 (tg.autocast raises)"),
    (r"^(distributed|is_distributed|multiprocessing|prepare_multiprocessing_environment|package|"
     r"hub|export|fx|futures|fork|wait|monitor|overrides|DisableTorchFunction|"
     r"DisableTorchFunctionSubclass|DispatchKey|DispatchKeySet|ExcludeDispatchKeyGuard|"
     r"compiled_with_cxx11_abi|cpp|classproperty|thread_safe_generator|USE_GLOBAL_DEPS|"
     r"USE_RTLD_GLOBAL_WITH_LIBTORCH|get_file_path|has_lapack|has_mkl|has_openmp|has_spectral|"
     r"init_num_threads|torch_version|utils|signal|masked|nested|jagged|is_nested|windows|AVG|"
     r"SUM|from_file|serialization|functional|types|BufferDict|ModuleDict|ParameterDict|Future|"
     r"NoneType|StreamObjType|torch|Tensor|Optimizer|handle_torch_function|"
     r"has_torch_function\w*|grad|attention|common_types|factory_kwargs|"
     r"BroadcastingList[123]|GRID_SAMPLE_\w+|assert_int_or_pair|boolean_dispatch|\w+_notes|"
     r"common_args|factory_common_args|multi_dim_common|enforce_grad_layout_policy|"
     r"kineto_available|profiler_legacy|profiler_util|is_view_replay_enabled|module_load|"
     r"as_subclass|hash_tensor|slice_inverse|graph|graph_settings|datapipes|DFIterDataPipe|"
     r"IterDataPipe|MapDataPipe|DataChunk|functional_datapipe|argument_validation|"
     r"runtime_validation|runtime_validation_disabled|non_deterministic|"
     r"guaranteed_datapipes_determinism|memory_format|init|clip_grad)$",
     "torch's infrastructure (distributed, multiprocessing, packaging, FX, dispatch, "
     "__torch_function__, build flags, datapipes), its own submodules, and re-exports"),
]

# names tracegrad could have and does not yet: each a gap, with why
GAPS = {
    **dict.fromkeys(("torch.native_batch_norm", "torch.native_dropout",
                     "torch.native_group_norm", "torch.native_layer_norm", "torch.native_norm",
                     "torch.batch_norm_backward_elemt", "torch.batch_norm_backward_reduce",
                     "torch.batch_norm_elemt", "torch.batch_norm_gather_stats",
                     "torch.batch_norm_gather_stats_with_counts", "torch.batch_norm_stats",
                     "torch.batch_norm_update_stats", "torch.convolution",
                     "torch.grid_sampler", "torch.grid_sampler_2d", "torch.grid_sampler_3d",
                     "torch.affine_grid_generator", "torch.embedding_bag",
                     "torch.embedding_renorm_", "torch.gru", "torch.lstm", "torch.rnn_relu",
                     "torch.rnn_tanh", "torch.norm_except_dim"),
                    "ATen's native entry points behind nn.functional and the nn modules "
                    "(which tracegrad has): frameworks call them, programs rarely"),
    **dict.fromkeys(("torch.from_dlpack", "torch.to_dlpack", "torch.frombuffer"),
                    "not yet: interchange with other array libraries"),
    **dict.fromkeys(("torch.histogram", "torch.histogramdd", "torch.Tensor.histogram",
                     "torch.polar", "torch.rsub", "torch.gradient", "torch.segment_reduce",
                     "torch.nonzero_static", "torch.Tensor.nonzero_static",
                     "torch.empty_permuted", "torch.fill", "torch.as_strided_",
                     "torch.as_strided_scatter", "torch.Tensor.as_strided_scatter",
                     "torch.addmv_", "torch.conj_physical_", "torch.resize_as_",
                     "torch.unsafe_split_with_sizes", "torch.is_inference",
                     "torch.Tensor.resize", "torch.Tensor.resize_as", "torch.Tensor.set_",
                     "torch.Tensor.is_set_to", "torch.Tensor.index",
                     "torch.Tensor.const_data_ptr", "torch.Tensor.grad_dtype",
                     "torch.Tensor.reinforce"),
                    "not yet"),
    **dict.fromkeys(("torch.lobpcg", "torch.pca_lowrank", "torch.svd_lowrank"),
                    "not yet: randomized and iterative eigen/SVD solvers"),
    **dict.fromkeys(("torch.profiler", "torch.autograd.ProfilerActivity",
                     "torch.autograd.ProfilerConfig", "torch.autograd.ProfilerEvent",
                     "torch.autograd.ProfilerState"),
                    "not yet: torch.profiler (tg.autograd.profiler.profile is there)"),
    "torch.quasirandom": "not yet: SobolEngine",
    "torch.layout": "not yet: the layout class (tg.strided and tg.sparse_coo exist)",
    **dict.fromkeys(("torch.Tensor.stft", "torch.Tensor.istft"),
                    "fft.py sits above tensor.py: torch.stft(x, ...) is the spelling"),
    **dict.fromkeys(("torch.Tensor.coalesce", "torch.Tensor.indices", "torch.Tensor.values",
                     "torch.Tensor.to_dense", "torch.Tensor.is_coalesced",
                     "torch.Tensor.dense_dim", "torch.Tensor.sparse_dim"),
                    "methods of sparse COO tensors only: tracegrad's sparse tensors have them "
                    "(tg.sparse_coo_tensor), its dense ones do not"),
    "torch.Tensor.output_nr": "each output of a multi-output op is its own tape node",
    "torch.Tensor.register_post_accumulate_grad_hook": "not yet: needs the engine's "
                                                       "accumulation and tg.compile's capture",
    "torch.Tensor.share_memory_": "not yet: tensors live in process-private NumPy memory",
    **dict.fromkeys(("torch.nn.AdaptiveLogSoftmaxWithLoss", "torch.nn.CrossMapLRN2d",
                     "torch.nn.LinearCrossEntropyLoss", "torch.nn.LinearCrossEntropyOptions",
                     "torch.nn.functional.linear_cross_entropy",
                     "torch.nn.functional.multi_head_attention_forward",
                     "torch.nn.functional.grouped_mm", "torch.nn.functional.scaled_grouped_mm",
                     "torch.nn.functional.scaled_mm"),
                    "not yet"),
    **dict.fromkeys(("torch.nn.FractionalMaxPool2d", "torch.nn.FractionalMaxPool3d",
                     "torch.nn.functional.fractional_max_pool2d",
                     "torch.nn.functional.fractional_max_pool2d_with_indices",
                     "torch.nn.functional.fractional_max_pool3d",
                     "torch.nn.functional.fractional_max_pool3d_with_indices"),
                    "not yet: random pooling regions (torch's draws to reproduce)"),
    **dict.fromkeys(("torch.nn.LazyConvTranspose1d", "torch.nn.LazyInstanceNorm3d"),
                    "not yet (their eager classes exist)"),
    **dict.fromkeys(("torch.nn.utils.convert_conv2d_weight_memory_format",
                     "torch.nn.utils.convert_conv3d_weight_memory_format"),
                    "memory formats are accepted and tensors stay in C order"),
    **dict.fromkeys(("torch.optim.Muon", "torch.optim.swap_in_optimizer_params_and_state"),
                    "not yet"),
    **dict.fromkeys(("torch.autograd.forward_ad", "torch.autograd.NestedIOFunction",
                     "torch.autograd.SavedTensor", "torch.autograd.anomaly_mode",
                     "torch.autograd.grad_mode", "torch.autograd.variable"),
                    "not yet: forward-mode dual tensors, the legacy Function API, the "
                    "submodule aliases (tg.func.jvp is forward mode)"),
    **dict.fromkeys(("torch.distributions." + n for n in (
        "ContinuousBernoulli", "CorrCholeskyTransform", "CumulativeDistributionTransform",
        "FisherSnedecor", "GeneralizedPareto", "InverseGamma", "Kumaraswamy", "LKJCholesky",
        "LogisticNormal", "PositiveDefiniteTransform", "VonMises", "Wishart",
        "continuous_bernoulli", "fishersnedecor", "generalized_pareto", "inverse_gamma",
        "kumaraswamy", "lkj_cholesky", "logistic_normal", "von_mises", "wishart")),
        "not yet: the rarer distributions"),
    "torch.utils.data.DistributedSampler": "no torch.distributed here",
}


def _kind(name):
    return next((reason for pattern, reason in KINDS if re.search(pattern, name)), None)


def _missing(space):
    theirs, ours = NAMESPACES[space]()
    out = []
    for name in dir(theirs):
        if name.startswith("_") or hasattr(ours, name):
            continue
        obj = getattr(theirs, name)
        if isinstance(obj, types.ModuleType) and not obj.__name__.startswith("torch"):
            continue                    # modules torch imports for itself (os, math, ...)
        if getattr(obj, "__module__", None) in ("typing", "typing_extensions",
                                               "collections.abc", "abc", "enum", "functools",
                                               "dataclasses", "builtins", "weakref"):
            continue                    # typing helpers and re-exported standard names
        if isinstance(obj, (str, bool, float)) and space != "torch":
            continue                    # docstring fragments and flags
        out.append(name)
    return out


@pytest.mark.parametrize("space", sorted(NAMESPACES))
def test_every_torch_name_is_here_or_accounted_for(space):
    unexplained = [n for n in _missing(space)
                   if _kind(n) is None and f"{space}.{n}" not in GAPS]
    assert not unexplained, (f"{space}: names of torch 2.13 that tracegrad neither has nor "
                             f"lists (add them, or list them in GAPS with why): "
                             f"{unexplained}")


def test_listed_gaps_are_still_gaps():
    stale = []
    for key in GAPS:
        space, _, name = key.rpartition(".")
        if space not in NAMESPACES:
            space, name = "torch." + space.rpartition(".")[2], name
        if name not in _missing(space):
            stale.append(key)
    assert not stale, f"filled gaps (take them off GAPS): {stale}"
