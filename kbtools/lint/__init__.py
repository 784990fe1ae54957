"""`kb lint`: one module per family of checks; each check yields Problem records."""
