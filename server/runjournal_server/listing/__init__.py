"""listing"""
