print("docfs")
