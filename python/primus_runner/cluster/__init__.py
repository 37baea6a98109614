"""The cluster around this host: Slurm hostlists, scheduler variables, rank mapping,
rendezvous, and the comparison of nodes at launch (cluster check). Must not start
processes of the job itself.
"""
