"""Benchmark host orchestration: provision (boto3), configure / deploy / bench / collect (Fabric), teardown.

Invoke tasks in infra/invoke_tasks.py; see docs/infra.md.
"""
