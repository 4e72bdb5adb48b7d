"""Human approvals: ask a person (through the team's channel), wait without holding anything, decide."""
