"""`kb mcp`: the review, lint, retention and promote functions over the Model Context Protocol."""
