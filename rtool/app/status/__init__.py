"""`rtool status`: gather (view), sections and the screen (render)."""
