"""Cheating impl (GPU): it sets a persisting-L2 carve-out and an access policy window over its inputs on
the current CUDA queue, so that its inputs stay in L2 through the evaluator's flush, then computes right
answers. The evaluator resets persisting L2 before each sample and its persisting-L2 guard must reject
the impl. On the CPU (or without cuda-python) it is the reference."""

import torch
from cheat_support import reference_for, tensors


def _pin(data) -> None:
    from cuda.bindings import runtime as rt

    _, props = rt.cudaGetDeviceProperties(torch.cuda.current_device())
    rt.cudaDeviceSetLimit(rt.cudaLimit.cudaLimitPersistingL2CacheSize, props.persistingL2CacheMaxSize)
    try:  # the window over the largest input; the carve-out alone is what the evaluator must see
        a = max((t for t in tensors(data) if t.is_cuda), key=lambda t: t.untyped_storage().nbytes())
        window = rt.cudaAccessPolicyWindow()
        window.base_ptr = a.data_ptr()
        window.num_bytes = min(a.untyped_storage().nbytes(), props.accessPolicyMaxWindowSize)
        window.hitRatio = 1.0
        window.hitProp = rt.cudaAccessProperty.cudaAccessPropertyPersisting
        window.missProp = rt.cudaAccessProperty.cudaAccessPropertyStreaming
        value = rt.cudaLaunchAttributeValue()
        value.accessPolicyWindow = window
        rt.cudaStreamSetAttribute(torch.cuda.current_stream().cuda_stream,
                                  rt.cudaLaunchAttributeID.cudaLaunchAttributeAccessPolicyWindow, value)
    except (AttributeError, TypeError, ValueError):
        pass


def custom_kernel(data):
    if torch.cuda.is_available():
        try:
            _pin(data)
        except ImportError:
            pass
    return reference_for(data).ref_kernel(data)
