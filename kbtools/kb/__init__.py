"""The knowledge-base model: layout, slugs, frontmatter, raw manifest."""
