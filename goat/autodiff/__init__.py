"""Automatic differentiation: grad as a transformation of the checked program."""
