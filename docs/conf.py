"""Sphinx configuration of the primus-runner documentation site (`make docs`).

MyST reads the Markdown pages as they are on the repository host; the site is built
offline: no intersphinx, no remote theme or asset (the alabaster theme ships with
Sphinx), and warnings are errors (the Makefile passes -W --keep-going).
"""
from __future__ import annotations

project = "primus-runner"
author = "primus-runner contributors"
extensions = ["myst_parser"]
source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build"]
# GitHub's anchors for headings down to ####, so the pages' #links work on the site too.
myst_heading_anchors = 4
html_theme = "alabaster"
html_title = "primus-runner"
html_show_sourcelink = False
html_theme_options = {"fixed_sidebar": True, "show_powered_by": False}
