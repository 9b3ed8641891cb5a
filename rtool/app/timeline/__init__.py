"""HTML pages of what rtool watches: a run's timeline (`rtool history RUN --html`) and the
status page (`rtool status --html`). Self-contained: inline CSS and SVG, no network."""
