"""The kernel IR -> kernel IR passes, one file a pass; codegen/stages.py
says which run for a target and in what order.

- memory.py, `hoist_allocations`: loop-invariant temporaries allocated once
  per loop (every target).
- split.py, `split_index_sets`: index-set splitting of a loop whose body
  branches on affine comparisons of its index (boundary strips and an
  interior that folds to straight-line code; every target).
- jam_while.py, `jam_while_loops`: unroll-and-jam of a parallel loop around
  a data-dependent while loop (the CPU family: latency hiding).
- scratch.py, `chunk_scratch`: a ParFor element's temporaries allocated
  once per strip of iterations (the CPU family).
- tile_steps.py, `tile_steps`: a ParFor around a step loop runs the steps
  over strips of elements kept in L1 scratch, vectorised (the CPU family).
- streaming.py, `stream_stores`: nontemporal stores for large fresh
  results (the CPU family; OpenCL C has none).
- expand.py, `expand_allocations`: per-iteration buffers of a ParFor body
  become slices of one block allocated before it (a GPU kernel has no heap).
- coarsen.py, `coarsen_parfors`: F iterations per work-item of a streaming
  ParFor, the loads before the stores (GPUs).
- contract.py, `contract_products`: a product that feeds only a reduction
  operator's `+` fused into it as a multiply-add (every target, last).

Each walks the IR through codegen/kir_traverse.py.
"""
