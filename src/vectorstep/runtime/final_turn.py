"""What the loop says to a model on its last allowed turn (the scripted model reacts to it too)."""

FINAL_TURN_NOTICE = (
    "You have reached the limit of tool calls for this task. Do not call any tool: "
    "give your final answer now, in the required JSON format, from what you have found so far."
)
