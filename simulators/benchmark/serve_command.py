"""A deployment as it is run: a server's command line and the start-up lines vLLM logs.

`parse_command(text)` reads a `vllm serve` command line (or `python -m vllm.entrypoints.openai.api_server`),
an SGLang `launch_server` one or a llama.cpp `llama-server` one, for the flags they share, into
vLLM's names (the deployment simulator's fields). A flag the course does not model is listed as
ignored, never refused, unless it is a modelled vLLM flag misspelt (difflib's ratio >= 0.9, which no
other vLLM flag reaches; llama.cpp's --ubatch-size is a real near-twin of --batch-size), as vLLM's
argument parser would refuse it; a modelled flag with a bad value raises ValueError naming the flag.

`parse_log(text)` reads what vLLM prints while it starts: its version, the non-default arguments,
the weights loaded, the activation peak, the KV cache memory and size, the maximum concurrency and
the CUDA-graph estimate. A log of another engine, or one cut before the KV cache line, raises
ValueError saying so.

`Serve.command_with(setting, value)` writes a change of one of vLLM's settings back in the engine's
own flags (the long form), or says the engine has none (None): SGLang's FP8 KV cache is `fp8_e4m3`,
its prefix cache is on unless `--disable-radix-cache`, its EAGLE is `--speculative-algorithm EAGLE`
with a draft path, steps, top-k 1 and steps + 1 draft tokens; llama.cpp's 8-bit cache is q8_0 for
K and V, with flash attention on (a quantized V cache needs it), and it has no FP8-weight, tensor-
parallel or EAGLE flag.

References: 1) vllm-project/vllm, vllm/engine/arg_utils.py (the flags and their short forms),
vllm/v1/core/kv_cache_utils.py and vllm/v1/worker/gpu_worker.py (the log lines); 2) SGLang
server arguments (sgl-project/sglang, python/sglang/srt/server_args.py: --tp-size,
--chunked-prefill-size, --max-running-requests, --kv-cache-dtype's choices, --quantization fp8,
--disable-radix-cache, --speculative-algorithm/-draft-model-path/-num-steps/-eagle-topk/
-num-draft-tokens, draft tokens set to steps + 1 at top-k 1); 3) ggml-org/llama.cpp
tools/server/README.md (--batch-size, --parallel, --cache-type-k/-v and their q8_0,
--flash-attn on|off|auto, --split-mode) and src/llama-context.cpp (a quantized V cache requires
flash attention).
"""

import ast
import difflib
import json
import re
import shlex
from dataclasses import dataclass, field
from typing import Any

# flag -> (vLLM's name, kind). Kinds: int, frac (0-1], kv (a KV cache format), str, on, off.
_VLLM: dict[str, tuple[str, str]] = {
    "--tensor-parallel-size": ("tensor_parallel_size", "int"), "-tp": ("tensor_parallel_size", "int"),
    "--pipeline-parallel-size": ("pipeline_parallel_size", "int"), "-pp": ("pipeline_parallel_size", "int"),
    "--data-parallel-size": ("data_parallel_size", "int"), "-dp": ("data_parallel_size", "int"),
    "--enable-expert-parallel": ("enable_expert_parallel", "on"),
    "--max-model-len": ("max_model_len", "int"),
    "--gpu-memory-utilization": ("gpu_memory_utilization", "frac"),
    "--max-num-seqs": ("max_num_seqs", "int"),
    "--max-num-batched-tokens": ("max_num_batched_tokens", "int"),
    "--kv-cache-dtype": ("kv_cache_dtype", "kv"),
    "--quantization": ("quantization", "str"), "-q": ("quantization", "str"),
    "--block-size": ("block_size", "int"),
    "--enable-prefix-caching": ("enable_prefix_caching", "on"),
    "--no-enable-prefix-caching": ("enable_prefix_caching", "off"),
    "--speculative-config": ("speculative_config", "str"),
    "--model": ("model", "str"),
}  # fmt: skip
_SGLANG: dict[str, tuple[str, str]] = {
    "--model-path": ("model", "str"), "--model": ("model", "str"),
    "--tp": ("tensor_parallel_size", "int"), "--tp-size": ("tensor_parallel_size", "int"),
    "--pp-size": ("pipeline_parallel_size", "int"),
    "--dp": ("data_parallel_size", "int"), "--dp-size": ("data_parallel_size", "int"),
    "--context-length": ("max_model_len", "int"),
    "--mem-fraction-static": ("gpu_memory_utilization", "frac"),
    "--max-running-requests": ("max_num_seqs", "int"),
    "--chunked-prefill-size": ("max_num_batched_tokens", "int"),
    "--kv-cache-dtype": ("kv_cache_dtype", "kv"),
    "--quantization": ("quantization", "str"),
    "--disable-radix-cache": ("enable_prefix_caching", "off"),
    "--speculative-algorithm": ("speculative_config", "str"),
}  # fmt: skip
_LLAMACPP: dict[str, tuple[str, str]] = {
    "-m": ("model", "str"), "--model": ("model", "str"), "-hf": ("model", "str"), "--hf-repo": ("model", "str"),
    "-c": ("max_model_len", "int"), "--ctx-size": ("max_model_len", "int"),
    "-np": ("max_num_seqs", "int"), "--parallel": ("max_num_seqs", "int"),
    "-b": ("max_num_batched_tokens", "int"), "--batch-size": ("max_num_batched_tokens", "int"),
    "-ctk": ("kv_cache_dtype", "kv"), "--cache-type-k": ("kv_cache_dtype", "kv"),
}  # fmt: skip
FLAGS = {"vllm": _VLLM, "sglang": _SGLANG, "llamacpp": _LLAMACPP}
# KV cache formats each engine names, as the course's: auto (the model's bf16) or fp8.
_KV = dict.fromkeys(("auto", "bf16", "f16", "fp16"), "auto") | dict.fromkeys(("fp8", "fp8_e4m3", "fp8_e5m2"), "fp8")
_KV_LLAMACPP = {"q8_0": "fp8"}  # 8-bit cache entries: the same bytes as FP8
# vLLM's (setting, value) in another engine's flags where it names the value differently or needs more flags.
_SPELLED: dict[tuple[str, str, str | None], list[str]] = {
    ("sglang", "kv_cache_dtype", "fp8"): ["--kv-cache-dtype", "fp8_e4m3"],
    ("llamacpp", "kv_cache_dtype", "fp8"): ["--cache-type-k", "q8_0", "--cache-type-v", "q8_0", "--flash-attn", "on"],
}


@dataclass
class Serve:
    engine: str  # "vllm", "sglang" or "llamacpp"
    model: str
    settings: dict[str, Any] = field(default_factory=dict)  # vLLM's names (deployment's fields)
    ignored: list[str] = field(default_factory=list)  # flags the course does not model
    tokens: list[str] = field(default_factory=list)  # the command line, split

    def flags_for(self, setting: str, value: str | None = None) -> list[str] | None:
        """The engine's own flags that set vLLM's `setting` to `value` (None: a switch on); None: it has none."""
        if spelled := _SPELLED.get((self.engine, setting, value)):
            return spelled
        if setting == "speculative_config" and self.engine == "sglang":  # vLLM's JSON as SGLang's flags
            spec = json.loads(value or "{}")
            n = int(spec["num_speculative_tokens"])  # at top-k 1 SGLang verifies steps + 1 tokens
            return ["--speculative-algorithm", spec["method"].upper(), "--speculative-draft-model-path", spec["model"],
                    "--speculative-num-steps", str(n), "--speculative-eagle-topk", "1", "--speculative-num-draft-tokens", str(n + 1)]  # fmt: skip
        names = FLAGS[self.engine]
        kinds = ("on",) if value is None else ("int", "frac", "kv", "str")
        if flags := [f for f, (name, kind) in names.items() if name == setting and kind in kinds]:
            return [max(flags, key=len)] + ([value] if value is not None else [])
        # a switch on by default, with a flag only to turn it off (SGLang's radix cache): drop that flag
        return [] if value is None and any(name == setting for name, _ in names.values()) else None

    def command_with(self, setting: str, value: str | None = None) -> tuple[str, str] | None:
        """The same command line with vLLM's `setting` at `value` in the engine's own flags (any earlier
        setting of them removed), and the change as shown; None where the engine has no such flag."""
        add = self.flags_for(setting, value)
        if add is None:
            return None
        names = FLAGS[self.engine]
        takes = {f: i + 1 < len(add) and not add[i + 1].startswith("-") for i, f in enumerate(add) if f[0] == "-"}
        out: list[str] = []
        gone: list[str] = []
        skip = False  # the token is the value of a flag dropped
        for i, tok in enumerate(self.tokens):
            flag = tok.split("=", 1)[0]
            name, kind = names.get(flag, ("", ""))
            if skip or (i > 0 and (name == setting or flag in takes)):
                skip = not skip and "=" not in tok and takes.get(flag, kind not in ("on", "off"))
                gone.append(tok)
                continue
            out.append(tok)
        return shlex.join(out + add), shlex.join(add) or f"without {shlex.join(gone)}"


def _engine(tokens: list[str]) -> tuple[str, int]:
    """(engine, index of the first argument after the program and its subcommand)."""
    words = [t.rsplit("/", 1)[-1] for t in tokens[:4]]
    if words[:2] == ["vllm", "serve"]:
        return "vllm", 2
    if "vllm.entrypoints.openai.api_server" in words:
        return "vllm", words.index("vllm.entrypoints.openai.api_server") + 1
    if "sglang.launch_server" in words:
        return "sglang", words.index("sglang.launch_server") + 1
    if words[0] in ("llama-server", "server"):
        return "llamacpp", 1
    raise ValueError(
        f"'{' '.join(tokens[:3])}' is not a server command this page reads: start with `vllm serve MODEL`, "
        "`python -m sglang.launch_server --model-path MODEL` or `llama-server -m MODEL`"
    )


def _value(flag: str, kind: str, raw: str, engine: str) -> Any:
    if kind == "int":
        if not re.fullmatch(r"\d+", raw) or int(raw) < 1:
            raise ValueError(f"{flag}: '{raw}' is not a whole number of at least 1")
        return int(raw)
    if kind == "frac":
        try:
            v = float(raw)
        except ValueError:
            v = -1.0
        if not 0 < v <= 1:
            raise ValueError(f"{flag}: '{raw}' is not a fraction between 0 and 1")
        return v
    if kind == "kv":
        known = {**_KV, **(_KV_LLAMACPP if engine == "llamacpp" else {})}
        if raw.lower() not in known:
            raise ValueError(f"{flag}: '{raw}' is not a KV cache format the course models ({', '.join(known)})")
        return known[raw.lower()]
    return raw


def parse_command(text: str) -> Serve:
    """A server command line (backslash line breaks allowed) into a Serve; ValueError names the flag."""
    try:
        # a line break after a backslash continues the line (a one-line box drops the break itself)
        tokens = shlex.split(re.sub(r"\\[ \t]*\r?\n|\\[ \t]+", " ", text))
    except ValueError as e:
        raise ValueError(f"the command line cannot be split into words: {e}") from None
    if not tokens:
        raise ValueError("paste the command line that starts the server")
    engine, i = _engine(tokens)
    names = FLAGS[engine]
    serve = Serve(engine, "", tokens=tokens)
    if engine == "vllm" and i < len(tokens) and not tokens[i].startswith("-"):
        serve.model, i = tokens[i], i + 1
    while i < len(tokens):
        tok = tokens[i]
        flag, eq, inline = tok.partition("=")
        i += 1
        if flag not in names:
            if engine == "vllm" and (near := difflib.get_close_matches(flag, names, n=1, cutoff=0.9)):
                raise ValueError(f"{flag} is not a vLLM flag: did you mean {near[0]}?")
            takes = not eq and i < len(tokens) and not tokens[i].startswith("-")
            serve.ignored.append(tok + (f" {tokens[i]}" if takes else ""))
            i += 1 if takes else 0
            continue
        name, kind = names[flag]
        if kind in ("on", "off"):
            serve.settings[name] = kind == "on"
            continue
        if not eq:
            if i >= len(tokens):
                raise ValueError(f"{flag}: a value is missing at the end of the command line")
            inline, i = tokens[i], i + 1
        serve.settings[name] = _value(flag, kind, inline, engine)
    serve.model = serve.settings.pop("model", serve.model)
    if not serve.model:
        raise ValueError("no model is named: give it after `vllm serve`, or with --model-path / -m")
    return serve


# ---- the start-up log ------------------------------------------------------------------------

_LOG = {
    "version": r"(?:version |Initializing a V1 LLM engine \(v)(\d+\.\d+\.\d+[\w.+-]*)",
    "weights_GiB": r"Model loading took ([\d.]+) GiB",
    "activation_peak_GiB": r"torch peak memory increase: ([\d.]+) ?GiB",
    "non_torch_GiB": r"non-torch forward increase memory: ([\d.]+) ?GiB",
    "kv_cache_GiB": r"Available KV cache memory: ([\d.]+) GiB",
    "kv_tokens": r"GPU KV cache size: ([\d,]+) tokens",
    "cuda_graph_GiB": r"Estimated CUDA graph memory: ([\d.]+) GiB|Graph capturing finished in \d+ secs?, took ([\d.]+) GiB",
}
_CONCURRENCY = r"Maximum concurrency for ([\d,]+) tokens per request: ([\d.]+)x"
_ARGS = r"non-default args: (\{.*\})"


def parse_log(text: str) -> dict[str, Any]:
    """What a vLLM start-up log states, by name; each figure with the line (1-based) it came from."""
    lines = text.splitlines()
    out: dict[str, Any] = {"lines": {}}

    def find(pattern: str) -> tuple[re.Match[str], int] | None:
        return next(((m, n) for n, line in enumerate(lines, 1) if (m := re.search(pattern, line))), None)

    for key, pattern in _LOG.items():
        if hit := find(pattern):
            value = next(g for g in hit[0].groups() if g is not None)
            out[key] = value if key == "version" else float(value.replace(",", ""))
            out["lines"][key] = hit[1]
    if hit := find(_CONCURRENCY):
        out["max_model_len"], out["max_concurrency"] = int(hit[0][1].replace(",", "")), float(hit[0][2])
        out["lines"]["max_concurrency"] = hit[1]
    if hit := find(_ARGS):
        try:
            out["args"] = ast.literal_eval(hit[0][1])
        except (ValueError, SyntaxError):
            raise ValueError(f"log line {hit[1]}: the non-default args cannot be read") from None
    if "kv_tokens" not in out:
        other = "SGLang" if "sglang" in text.lower() else "llama.cpp" if "llama_" in text else ""
        if other:
            raise ValueError(f"this looks like a {other} log: the page reads vLLM's start-up log")
        seen = "weights" if "weights_GiB" in out else "no vLLM line"
        raise ValueError(
            f"no 'GPU KV cache size: N tokens' line ({seen} found): paste the log up to the line "
            "'Maximum concurrency for … tokens per request'"
        )
    return out
