"""Orchestrations the CLI starts: they simulate what an evaluation lacks, then analyse (layer
``workflows``: above present, below the CLI; no click: progress and notices come back
through callbacks the caller passes)."""
