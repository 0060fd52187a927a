"""The commands: each takes one ``context.Context``, runs the pipeline (``pipeline.prepare``) or
its own reading, and returns a ``Result`` that ``output/render`` prints."""
