"""Topics: the raw sample pool and publishing, samples to JSON, `/rosout` capture."""
