import sys


def greet(name: str) -> str:
    return f"Helo, {name}!"


if __name__ == "__main__":
    for name in sys.argv[1:] or ["world"]:
        print(greet(name))
