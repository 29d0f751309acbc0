"""The one cost model: bytes, FLOPs and time of transformer inference on a GPU.

Every figure comes from small pure functions fed by the catalogues (catalog.py) and an engine
profile (efficiency.py). Callers import this module (`from ..core import costmodel as cm`); the
names below live by what they hold:

    bytes_flops.py    parameter counts, bytes per value, weight and KV-cache bytes, FLOPs; no time
    roofline.py       step_time, the one function that prices a forward pass, and its shortcuts
    parallel_time.py  what a layout over several GPUs adds: collectives, pipeline sends
    limits.py         which roof binds, the figure a GPU lacks, whether it all fits (memory_fit)

Only roofline.py reads an engine profile's factors (tests/test_one_speed_model.py).
"""

from .bytes_flops import BF16_BYTES as BF16_BYTES
from .bytes_flops import GB as GB
from .bytes_flops import GiB as GiB
from .bytes_flops import attention_flops as attention_flops
from .bytes_flops import block_bytes_per_value as block_bytes_per_value
from .bytes_flops import bytes_per_value as bytes_per_value
from .bytes_flops import generation_flops as generation_flops
from .bytes_flops import kv_bytes_per_sequence as kv_bytes_per_sequence
from .bytes_flops import kv_bytes_per_token as kv_bytes_per_token
from .bytes_flops import kv_layers as kv_layers
from .bytes_flops import kv_replication as kv_replication
from .bytes_flops import kv_tokens_held as kv_tokens_held
from .bytes_flops import lm_head_params as lm_head_params
from .bytes_flops import param_counts as param_counts
from .bytes_flops import precision as precision
from .bytes_flops import routed_expert_params as routed_expert_params
from .bytes_flops import sparse24_bytes_per_value as sparse24_bytes_per_value
from .bytes_flops import streamed_weight_bytes as streamed_weight_bytes
from .bytes_flops import unstructured_bytes_per_value as unstructured_bytes_per_value
from .bytes_flops import weight_bytes as weight_bytes
from .limits import activation_bytes as activation_bytes
from .limits import decode_compute_bound_batch as decode_compute_bound_batch
from .limits import memory_fit as memory_fit
from .limits import missing_compute_figure as missing_compute_figure
from .limits import ridge_point as ridge_point
from .parallel_time import link_GBps_one_way as link_GBps_one_way
from .roofline import ACTIVATION_BYTES as ACTIVATION_BYTES
from .roofline import DEFAULT_ENGINE as DEFAULT_ENGINE
from .roofline import IDEAL as IDEAL
from .roofline import SMALL_BATCH_COMPUTE as SMALL_BATCH_COMPUTE
from .roofline import Efficiency as Efficiency
from .roofline import StepTime as StepTime
from .roofline import decode_line as decode_line
from .roofline import decode_step_time as decode_step_time
from .roofline import default_efficiency as default_efficiency
from .roofline import efficiency as efficiency
from .roofline import matmul_path as matmul_path
from .roofline import prefill_time as prefill_time
from .roofline import roofline_s as roofline_s
from .roofline import speculative_time_per_token_s as speculative_time_per_token_s
from .roofline import speculative_tokens_per_pass as speculative_tokens_per_pass
from .roofline import step_time as step_time
from .roofline import uniform_decode_step_time as uniform_decode_step_time
