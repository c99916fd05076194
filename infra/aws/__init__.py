"""AWS side of the orchestrator: one small module per resource (AMI, key pair, network, placement, instances)."""
