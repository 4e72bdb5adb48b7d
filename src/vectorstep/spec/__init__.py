"""What users write: typed, frozen models of their YAML files, and loading them with located errors."""
