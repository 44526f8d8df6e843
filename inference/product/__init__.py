"""Disclosure risk of the post-processed product (what the Census published)."""
