"""The CLI's infrastructure: the command registry and its lazy root group, the error policy,
help tidying, commands made from declarations, the context and the whole config schema.
Command modules (rtool/app/commands/) build on it; it imports none of them."""
