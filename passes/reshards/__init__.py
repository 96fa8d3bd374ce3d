"""What the insert-reshards pass (passes/insert_reshards.py) is made of."""
