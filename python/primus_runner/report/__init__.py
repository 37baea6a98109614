"""``primus-cli report RUN``: a run, or a doctor run, drawn as one self-contained HTML file.

Owns reading what a run left (the run records beside the node logs, runrecord.py; a
doctor's ``--json`` record) into the figures to draw (load.py), drawing them as inline
SVG (svg.py), the page around them (page.py) and the command (cli.py). No network, no
script library: the file opens anywhere, offline.
"""
