"""Replaces per-file integer-helper copies by isa/intmath.h (re-runnable:
python3 intmath.py ROOT). A copy is removed only where its definition is
found; calls are renamed with word boundaries."""
import re, sys, os
root = sys.argv[1]
U = {'cdiv': 'nx_cdiv_u64', 'min64': 'nx_min_u64', 'max64': 'nx_max_u64'}
I = {'cdiv': 'nx_cdiv_i64', 'min64': 'nx_min_i64', 'max64': 'nx_max_i64'}
plan = {
 'kernels/select_and_scatter/plan.c': dict(I, ceil_div='nx_ceil_div_i64'),
 'kernels/conv/wgrad/wgrad_emit.c': dict(I, fdiv='nx_floor_div_i64'),
 'kernels/conv/wgrad/wgrad_plan.c': I,
 'kernels/conv/depthwise/conv2d_column_packing_1.c': dict(I, align64='@64'),
 'kernels/conv/depthwise/conv2d_depthwise_f01b.c': dict(I, align64='@64'),
 'kernels/conv/depthwise/depthwise_plan.c': {'floor_div': 'nx_floor_div_i64', 'ceil_div': 'nx_ceil_div_i64'},
 'kernels/conv/forward/conv2d_pbp.c': U,
 'kernels/conv/forward/conv2d_pbp_fb01.c': dict(U, pow2_ceil='nx_pow2_ceil_u32'),
 'kernels/conv/forward/conv2d_pbp_plan.c': dict(U, pow2_ceil='nx_pow2_ceil_u32'),
 'kernels/blockwise_mm/blockwise_mm_plan.c': U,
 'kernels/transpose/tiled_dve_transpose_10.c': {'min_u64': 'nx_min_u64'},
 'kernels/transpose/tiled_pf_transpose.c': {'ceil_div32': '(uint32_t)nx_cdiv_u64'},
 'kernels/author/author_alloc.c': {'align_up': 'nx_round_up_u64'},
 'isa/asm.c': {'round_up': 'nx_round_up_u64'},
 'isa/pe/datapath.c': {'round_up': 'nx_round_up_u64'},
 'kernels/topk/topk_core.h': {'tk_ceil': 'nx_cdiv_u64', 'tk_min': 'nx_min_u64', 'tk_max': 'nx_max_u64'},
}
topk_users = ['kernels/topk/' + f for f in os.listdir(os.path.join(root, 'kernels/topk')) if f.endswith(('.c', '.h'))]

def remove_def(s, name):
    # a one-line or a brace-block definition: static [inline] TYPE name(...) {...}
    m = re.search(r'^static (inline )?[u]?int(32|64)_t ' + name + r'\([^)]*\) \{', s, re.M)
    if not m: return s, False
    i = m.start(); j = m.end(); depth = 1
    while depth:
        depth += {'{': 1, '}': -1}.get(s[j], 0); j += 1
    if s[j:j+1] == '\n': j += 1
    return s[:i] + s[j:], True

def rename_calls(s, name, new):
    out = []; i = 0
    pat = re.compile(r'(?<![\w.>])' + name + r'\(')
    while True:
        m = pat.search(s, i)
        if not m: out.append(s[i:]); break
        out.append(s[i:m.start()])
        if new.startswith('@'):  # align64(x) -> nx_round_up_u64(x, 64)
            j = m.end(); depth = 1
            while depth:
                depth += {'(': 1, ')': -1}.get(s[j], 0); j += 1
            out.append('nx_round_up_u64(' + s[m.end():j-1] + ', ' + new[1:] + ')'); i = j
        else:
            out.append(new + '('); i = m.end()
    return ''.join(out)

def add_include(s):
    if '"isa/intmath.h"' in s: return s
    incs = list(re.finditer(r'^#include "[^"]+"\n', s, re.M))
    if incs:
        k = incs[0].end() if incs[0].group(0).startswith('#include "' ) and False else incs[-1].end()
        return s[:k] + '#include "isa/intmath.h"\n' + s[k:]
    incs = list(re.finditer(r'^#include <[^>]+>\n', s, re.M))
    k = incs[-1].end()
    return s[:k] + '\n#include "isa/intmath.h"\n' + s[k:]

for f, names in plan.items():
    p = os.path.join(root, f); s = open(p).read(); changed = False
    for name, new in names.items():
        s, found = remove_def(s, name)
        if found or f.endswith('topk_core.h'):
            s = rename_calls(s, name, new); changed = True
    if changed:
        s = add_include(s); open(p, 'w').write(s); print('rewrote', f)
for f in topk_users:
    p = os.path.join(root, f); s = open(p).read(); t = s
    for name, new in plan['kernels/topk/topk_core.h'].items(): t = rename_calls(t, name, new)
    if t != s: open(p, 'w').write(t); print('renamed in', f)
