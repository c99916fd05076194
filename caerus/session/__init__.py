"""The local session: plan the fleet, launch every process, watch progress, stop by PID and collect the results."""
