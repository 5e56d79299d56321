#!/usr/bin/env python3
"""make_kineto_traces.py: real PyTorch profiler (Kineto) traces for the Kineto reader's tests.

Builds a small randomly initialised decoder model from a config (no download), runs one
prefill and several greedy decode steps under torch.profiler with a schedule and
prof.step() per inference step, and writes the exported Chrome trace gzipped.

    python tools/make_kineto_traces.py --out tests/data/kineto \
        --arch llama --layers 3 --decode-steps 6

    # module names: with_modules=True and with_stack=True (torch 2.13 writes the
    # "nn.Module: LlamaDecoderLayer_0" python_function ranges only with both)
    python tools/make_kineto_traces.py --out tests/data/kineto --arch qwen2 --layers 2 \
        --decode-steps 4 --modules

    # a record_function range around every decode forward, named decode_<k>
    python tools/make_kineto_traces.py ... --annotate decode

    # the same model with a 16x wider MLP (a deliberately slower configuration, for compare)
    python tools/make_kineto_traces.py --out tests/data/compare --arch llama --layers 2 \
        --decode-steps 4 --hidden 64 --intermediate 2048 --name llama_mlp2048

    # on an NVIDIA GPU: CUDA kernels, memcpys and their runtime calls (ProfilerActivity.CUDA)
    python tools/make_kineto_traces.py --out tests/data/kineto --arch llama --layers 2 \
        --decode-steps 3 --device cuda --modules

    # on an NVIDIA GPU, decode as CUDA graph replays: step 0 runs the model eagerly; the model's
    # forward over a fixed window of --prompt-len tokens is then captured once in a
    # torch.cuda.CUDAGraph and every decode step is one replay (cudaGraphLaunch) plus the eager
    # kernels that pick the next token and shift the window
    python tools/make_kineto_traces.py --out tests/data/kineto --arch llama --layers 2 \
        --decode-steps 4 --device cuda --cuda-graph

Families (--arch): llama, gpt2, qwen2, opt, mistral (transformers' LlamaForCausalLM,
GPT2LMHeadModel, Qwen2ForCausalLM, OPTForCausalLM, MistralForCausalLM).

Needs torch and transformers (CPU build is enough without --device cuda). The trace is
CPU-only on a machine without a GPU: the reader then takes the main thread's cpu_op events as
the device plane.
The model config and the command are written beside the trace as <name>.json.
"""
import argparse
import gzip
import json
import os
import shutil
import sys
import tempfile

import torch

ARCHS = ["llama", "gpt2", "qwen2", "opt", "mistral"]
# The decoder layer class of each family: what with_modules names every layer iteration.
LAYER_CLASS = {"llama": "LlamaDecoderLayer", "gpt2": "GPT2Block", "qwen2": "Qwen2DecoderLayer",
               "opt": "OPTDecoderLayer", "mistral": "MistralDecoderLayer"}


def build_model(arch, layers, hidden, heads, vocab, seed, intermediate=None, attn_impl=None):
    torch.manual_seed(seed)
    extra = {"attn_implementation": attn_impl} if attn_impl else {}
    import transformers as tf
    if arch == "gpt2":
        cfg = tf.GPT2Config(vocab_size=vocab, n_embd=hidden, n_layer=layers, n_head=heads,
                            n_positions=256, n_inner=intermediate, **extra)
        model = tf.GPT2LMHeadModel(cfg)
    elif arch == "opt":
        cfg = tf.OPTConfig(vocab_size=vocab, hidden_size=hidden, num_hidden_layers=layers,
                           num_attention_heads=heads, ffn_dim=intermediate or hidden * 4,
                           word_embed_proj_dim=hidden, max_position_embeddings=256, **extra)
        model = tf.OPTForCausalLM(cfg)
    else:
        conf, cls = {"llama": (tf.LlamaConfig, tf.LlamaForCausalLM),
                     "qwen2": (tf.Qwen2Config, tf.Qwen2ForCausalLM),
                     "mistral": (tf.MistralConfig, tf.MistralForCausalLM)}[arch]
        cfg = conf(vocab_size=vocab, hidden_size=hidden, intermediate_size=intermediate or hidden * 2,
                   num_hidden_layers=layers, num_attention_heads=heads, num_key_value_heads=heads,
                   max_position_embeddings=256, **extra)
        model = cls(cfg)
    model.eval()
    return model, cfg


def intermediate_of(arch, cfg):
    return {"gpt2": lambda: cfg.n_inner, "opt": lambda: cfg.ffn_dim}.get(
        arch, lambda: cfg.intermediate_size)()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--arch", choices=ARCHS, default="llama")
    ap.add_argument("--layers", type=int, default=3)
    ap.add_argument("--hidden", type=int, default=32)
    ap.add_argument("--heads", type=int, default=2)
    ap.add_argument("--intermediate", type=int, default=None,
                    help="MLP width (default: 2 x hidden for llama/qwen2/mistral, 4 x hidden for gpt2/opt)")
    ap.add_argument("--attn-impl", choices=["eager", "sdpa"], default=None,
                    help="attention implementation (default: the transformers default, sdpa)")
    ap.add_argument("--vocab", type=int, default=128)
    ap.add_argument("--prompt-len", type=int, default=8)
    ap.add_argument("--decode-steps", type=int, default=6)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--modules", action="store_true",
                    help="profile with with_modules=True and with_stack=True (nn.Module ranges)")
    ap.add_argument("--annotate", default=None,
                    help="wrap every decode forward in record_function('<ANNOTATE>_<k>')")
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu",
                    help="run the model there; cuda also records the CUDA activity (kernels)")
    ap.add_argument("--cuda-graph", action="store_true",
                    help="(--device cuda) decode steps as replays of one captured CUDA graph")
    ap.add_argument("--no-gzip", action="store_true", help="write the plain .json trace")
    ap.add_argument("--name", default=None)
    a = ap.parse_args()
    if a.cuda_graph and a.device != "cuda":
        ap.error("--cuda-graph needs --device cuda")
    torch.set_num_threads(1)
    model, cfg = build_model(a.arch, a.layers, a.hidden, a.heads, a.vocab, a.seed,
                             a.intermediate, a.attn_impl)
    name = a.name or f"{a.arch}_l{a.layers}_d{a.decode_steps}"
    prompt = torch.randint(0, a.vocab, (1, a.prompt_len))
    cuda = a.device == "cuda"
    if cuda:
        name += "_cuda_graph" if a.cuda_graph and not a.name else ("_cuda" if not a.name else "")
        model = model.to("cuda")
        prompt = prompt.to("cuda")

    def step_done(prof):
        if cuda:
            torch.cuda.synchronize()  # the step's kernels end inside its ProfilerStep range
        if prof is not None:
            prof.step()

    def run_steps(prof):
        past, ids = None, prompt
        for k in range(1 + a.decode_steps):  # step 0 = prefill, then decode steps
            if a.annotate and k > 0:
                with torch.profiler.record_function(f"{a.annotate}_{k}"):
                    out = model(input_ids=ids, past_key_values=past, use_cache=True)
            else:
                out = model(input_ids=ids, past_key_values=past, use_cache=True)
            past = out.past_key_values
            ids = out.logits[:, -1:].argmax(-1)
            step_done(prof)

    graph = {}

    def capture_graph():
        """One forward over a fixed window of tokens, captured (no cache: fixed shapes)."""
        static_ids = prompt.clone()
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):  # warm-up on a side stream, as torch.cuda.graphs asks
            for _ in range(3):
                model(input_ids=static_ids, use_cache=False)
        torch.cuda.current_stream().wait_stream(side)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            static_logits = model(input_ids=static_ids, use_cache=False).logits
        graph.update(g=g, ids=static_ids, logits=static_logits)

    def run_graph_steps(prof):
        out = model(input_ids=prompt, use_cache=False)  # step 0: the eager forward
        graph["ids"].copy_(prompt)
        step_done(prof)
        for _ in range(a.decode_steps):  # each decode step: one replay, then the next window
            graph["g"].replay()
            nxt = graph["logits"][:, -1:].argmax(-1)
            graph["ids"].copy_(torch.cat([graph["ids"][:, 1:], nxt], dim=1))
            step_done(prof)
        del out

    steps = run_graph_steps if a.cuda_graph else run_steps
    activities = [torch.profiler.ProfilerActivity.CPU]
    if cuda:
        activities.append(torch.profiler.ProfilerActivity.CUDA)
    with torch.no_grad():
        run_steps(None)  # warm-up outside the profiler (lazy initialisation)
        if a.cuda_graph:
            capture_graph()
            run_graph_steps(None)
        tmp = tempfile.mkdtemp()
        raw = os.path.join(tmp, name + ".pt.trace.json")
        sched = torch.profiler.schedule(wait=0, warmup=0, active=1 + a.decode_steps, repeat=1)
        with torch.profiler.profile(activities=activities,
                                    schedule=sched, with_modules=a.modules, with_stack=a.modules,
                                    on_trace_ready=lambda p: p.export_chrome_trace(raw)) as prof:
            steps(prof)
    os.makedirs(a.out, exist_ok=True)
    if a.no_gzip:
        dest = os.path.join(a.out, name + ".pt.trace.json")
        shutil.copyfile(raw, dest)
    else:
        dest = os.path.join(a.out, name + ".pt.trace.json.gz")
        with open(raw, "rb") as src, gzip.GzipFile(dest, "wb", mtime=0) as dst:
            shutil.copyfileobj(src, dst)
    shutil.rmtree(tmp)
    meta = {"arch": a.arch, "layers": a.layers, "hidden": a.hidden, "heads": a.heads,
            "intermediate": intermediate_of(a.arch, cfg),
            "attn_implementation": getattr(cfg, "_attn_implementation", None),
            "vocab": a.vocab, "prompt_len": a.prompt_len, "decode_steps": a.decode_steps,
            "steps": 1 + a.decode_steps, "seed": a.seed, "torch": torch.__version__,
            "modules": a.modules, "layer_class": LAYER_CLASS[a.arch],
            "device": a.device, "cuda_graph": a.cuda_graph,
            "command": "python tools/make_kineto_traces.py " + " ".join(sys.argv[1:])}
    if a.annotate:
        meta["annotate"] = a.annotate
    if cuda:
        meta["gpu"] = torch.cuda.get_device_name(0)
        meta["cuda"] = torch.version.cuda
    try:
        import transformers
        meta["transformers"] = transformers.__version__
    except ImportError:
        pass
    with open(os.path.join(a.out, name + ".json"), "w") as f:
        json.dump(meta, f, indent=1, sort_keys=True)
        f.write("\n")
    print(dest, os.path.getsize(dest))


if __name__ == "__main__":
    main()
