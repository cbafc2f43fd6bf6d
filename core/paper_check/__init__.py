"""The paper check: each paper's claims beside our measurements, the paper-architecture
column, and verdicts decided by intervals.
"""
