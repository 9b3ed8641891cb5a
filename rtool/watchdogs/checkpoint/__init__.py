"""The checkpoint watchdog (`rtool watch checkpoint`): spec, model, verdict, watchdog."""
