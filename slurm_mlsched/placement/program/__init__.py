"""The program of MODEL.md §3 and what solves and checks it (docs/formulation.md §3–4, §9).

* :mod:`.integer_program`: the full packing/covering integer program over all jobs (the
  offline ``exact`` reference and the LP bound, §9);
* :mod:`.job_lp`: the per-arrival LP relaxation of one job's program (§4), and
  :mod:`.joint_lp`: the LP over the head of the queue under late binding (§14.3);
* :mod:`.highs_lp`: the in-process HiGHS adapter both LPs are solved with;
* :mod:`.residual`: residual capacity C̃ (§3), :mod:`.packing`: whole-task packing on it,
  :mod:`.eligibility`: the GPU-type rule on room matrices (§17);
* :mod:`.feasibility`: could a job ever run here (before any solver), :mod:`.verify`: the
  invariants every decision must hold, checked from the outside.

Nothing here is a policy of its own except ``exact``; the policies built on these parts
are in :mod:`..yu_rr` and :mod:`..baselines`.
"""
