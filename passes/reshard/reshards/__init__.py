"""What the insert-reshards pass (passes/reshard/insert_reshards.py) is made of."""
