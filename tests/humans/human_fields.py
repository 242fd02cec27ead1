"""The answer form the human-task tests use (imported by conftest and the tests)."""

FIELDS = [
    {"name": "decision", "type": "select", "required": True, "options": ["approve", "reject"], "label": "Decision"},
    {"name": "notes", "type": "text", "label": "Notes", "description": "Shown to the requester"},
    {"name": "urgent", "type": "boolean"},
    {"name": "amount", "type": "number", "default": 10},
    {"name": "copies", "type": "integer"},
]
