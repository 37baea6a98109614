"""The cluster around this host: rank mapping (from what the scheduler package
reads), rendezvous, and the comparison of nodes at launch (cluster check). Must
not start processes of the job itself.
"""
