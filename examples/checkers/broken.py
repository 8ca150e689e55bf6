# A Python checker with a syntax error: POST /checkers refuses it.
def rows_of(data:
    return data["rows"]
