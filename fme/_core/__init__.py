"""The computation both engines share (below the front doors): the resolved plan, the batch kernel, the
mergeable summaries, the exclusion bookkeeping, step shrinking and the in-memory result.
"""
