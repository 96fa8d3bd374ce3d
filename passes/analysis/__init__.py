"""What reads a program or a layout and changes nothing; every stage may consult it.

`collectives/` is the collective model: what each collective does to a layout (steps.py), its
bytes under the ring model (ring_cost.py), its device groups (groups.py), the cheapest plan
between two layouts (planner.py, search.py) and Shardy's plan (shardy_plan.py). `cost.py` is
the cost report (bytes per collective, peak memory); `verify_unreduced_axes.py` the check.
"""
