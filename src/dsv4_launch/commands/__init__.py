"""The commands: thin shells over one pipeline (``pipeline.prepare``) that render or act."""
