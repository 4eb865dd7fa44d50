def farewell(name: str) -> str:
    return f"Bye, {name}!"
