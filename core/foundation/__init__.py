"""The foundation every layer stands on: range checks, seeds, the registry and the parts'
declarations, the metric schema and metrics, results, stages, progress, threads and
device, caveats and releases. Nothing here imports a folder above it.
"""
