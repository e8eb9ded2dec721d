"""``yu-rr``: the paper's online randomized-rounding algorithm and the forms built on it.

The paper's algorithm (Yu et al., IEEE TNSE; MODEL.md §4–5) is :mod:`.per_arrival`: on
each arrival, the job's LP relaxation (:mod:`..program.job_lp`), seeded randomized
rounding and repair, in the non-elastic (:mod:`.nonelastic`, docs/formulation.md §6, the
default) or elastic (:mod:`.elastic`, §5) form; :mod:`.arrival` holds what every
per-arrival step shares.

Our extensions, each named by a parameter (docs/formulation.md §14, §16):

* late binding over the pending queue: :mod:`.late_binding` (the loop, §14.1),
  :mod:`.queue_order` (§14.2), :mod:`.joint` (the joint program over the queue's head,
  §14.3), :mod:`.list_schedule` (the requested-width estimate it compares with, §14.9),
  :mod:`.lookahead` (expected arrivals, §14.7);
* checkpoint-restart preemption: :mod:`.preemption` (§16).
"""
