"""Helpers the hidden test cells call: fresh random shapes and inputs, compared with the reference."""
