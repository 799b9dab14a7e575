def hello():
    print("Hi")

def greet():
    print("Hello")
