"""net package."""
