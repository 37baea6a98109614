"""What the job's scheduler says, read only: Slurm hostlist expressions
(``hostlist``) and the Slurm, OpenMPI/PMIx and Kubernetes variables with the
variable each value came from (``variables``). A floor below the variable
registry's rules, which ask it, and the cluster's rank mapping, which builds on it.
"""
