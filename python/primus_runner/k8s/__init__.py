"""Kubernetes as a launch target: presets, the manifest renderer and its offline
checks (host side), and the pod side's identity and peer wait (pod.py, standard
library only: it runs inside the user's image)."""
