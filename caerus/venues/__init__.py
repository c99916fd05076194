"""Venue protocol knowledge: URLs, subscribe frames, msgspec decoders, frame classes, book validation rules."""
