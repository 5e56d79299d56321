"""placeholder"""
FORMAT = "nsys"
COMM_SUBTASKS = [("", "", 1.0)]
