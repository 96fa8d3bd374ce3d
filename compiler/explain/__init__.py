"""Seeing the sharding: per-value text, Graphviz, a self-contained HTML page, device grids.

    print(explain_text(module, ctx.data.get("origins")))  # text.py: value, op, sharding, origin
    open("g.dot", "w").write(to_dot(module))  # dot.py: nodes coloured by sharding
    open("g.html", "w").write(to_html(module))  # html_page.py: SVG graph + legend + value table
    print(visualize_sharding((16, 64), mapping))  # device_grid.py: which devices hold which block

graph.py is the program as a graph all views draw (nodes, edges, a colour per sharding);
graph_layout.py places a graph's nodes in layers for the HTML page.
"""
